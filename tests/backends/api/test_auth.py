"""Credentials from the settings' environment: which key wins, Vertex AI, and what a missing key says."""

from __future__ import annotations

import pytest

from gemini_relay.backends.api import resolve_auth
from gemini_relay.backends.api.auth import GEMINI_ENDPOINT
from gemini_relay.errors import BackendUnavailable


def test_gemini_api_key_alone_goes_to_the_public_endpoint() -> None:
    auth = resolve_auth({"GEMINI_API_KEY": "abcdefgh12345678"})
    assert (auth.api_key, auth.key_source, auth.vertex, auth.base_url) == (
        "abcdefgh12345678",
        "GEMINI_API_KEY",
        False,
        GEMINI_ENDPOINT,
    )


def test_google_api_key_wins_over_gemini_api_key() -> None:
    auth = resolve_auth({"GEMINI_API_KEY": "gemini-key-1111", "GOOGLE_API_KEY": "google-key-2222"})
    assert (auth.api_key, auth.key_source) == ("google-key-2222", "GOOGLE_API_KEY")


def test_a_blank_key_counts_as_missing() -> None:
    with pytest.raises(BackendUnavailable, match="neither GEMINI_API_KEY nor GOOGLE_API_KEY"):
        resolve_auth({"GEMINI_API_KEY": "  ", "GOOGLE_GEMINI_BASE_URL": "http://127.0.0.1:1"})


def test_the_base_url_override_is_honoured() -> None:
    assert resolve_auth({"GEMINI_API_KEY": "k" * 20, "GOOGLE_GEMINI_BASE_URL": "http://127.0.0.1:9"}).endpoint == (
        "http://127.0.0.1:9"
    )


def test_vertex_takes_project_and_location() -> None:
    auth = resolve_auth(
        {"GOOGLE_GENAI_USE_VERTEXAI": "true", "GOOGLE_CLOUD_PROJECT": "proj", "GOOGLE_CLOUD_LOCATION": "us-central1"}
    )
    assert (auth.vertex, auth.project, auth.location, auth.api_key) == (True, "proj", "us-central1", None)
    assert "Vertex AI project proj" in auth.describe()


def test_vertex_without_project_or_key_names_what_is_missing() -> None:
    with pytest.raises(BackendUnavailable, match="GOOGLE_CLOUD_PROJECT and GOOGLE_CLOUD_LOCATION"):
        resolve_auth({"GOOGLE_GENAI_USE_VERTEXAI": "1", "GOOGLE_CLOUD_PROJECT": "proj"})


def test_the_key_is_never_shown_beyond_its_last_four_characters() -> None:
    auth = resolve_auth({"GEMINI_API_KEY": "secret-key-value-9876"})
    assert "secret" not in repr(auth) and "secret" not in auth.describe()
    assert auth.describe().startswith("GEMINI_API_KEY …9876")
    assert "…" not in resolve_auth({"GEMINI_API_KEY": "short"}).describe()
