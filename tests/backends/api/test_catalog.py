"""gemini-models, gemini-doctor and gemini-help for the api backend: read-only calls, no tokens spent."""

from __future__ import annotations

import socket

import pytest

from gemini_relay.backends.api.catalog import FALLBACK_MODELS
from tests.fakes.fake_gemini_api import FakeGeminiApi

from .conftest import TEST_KEY, ApiWorld

pytestmark = pytest.mark.anyio


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_models_come_from_the_live_models_list(world: ApiWorld) -> None:
    catalog = await world.backend().models()
    assert catalog.live and catalog.notice is None
    assert "gemini-2.5-pro" in catalog.ids and "gemini-2.5-flash" in catalog.ids
    assert world.api.requests[-1].path == "/v1beta/models"


async def test_an_unreachable_endpoint_falls_back_to_the_built_in_list_with_a_notice(world: ApiWorld) -> None:
    catalog = await world.backend(GOOGLE_GEMINI_BASE_URL=f"http://127.0.0.1:{_closed_port()}").models()
    assert not catalog.live and catalog.models == FALLBACK_MODELS
    assert catalog.notice is not None and "could not reach" in catalog.notice


async def test_models_without_a_key_fall_back_with_the_fix_in_the_notice(world: ApiWorld) -> None:
    catalog = await world.backend(GEMINI_API_KEY=None).models()
    assert not catalog.live and catalog.notice is not None and "GEMINI_API_KEY" in catalog.notice


async def test_doctor_checks_key_endpoint_and_default_model_without_generating(world: ApiWorld) -> None:
    diagnosis = await world.backend(GEMINI_DEFAULT_MODEL="gemini-2.5-flash").diagnose()
    assert diagnosis.ok, diagnosis.lines()
    text = "\n".join(diagnosis.lines())
    assert "google-genai: version" in text and f"GEMINI_API_KEY …{TEST_KEY[-4:]}" in text
    assert TEST_KEY not in text and TEST_KEY[:-4] not in text
    assert "gemini-2.5-flash is listed" in text
    assert "call: the key may call gemini-2.5-flash (a countTokens call, no tokens)" in text
    assert {r.kind for r in world.api.requests} == {"models", "count_tokens"}  # no generate call


async def test_doctor_is_not_ready_when_the_key_may_list_but_not_call_the_default_model(world: ApiWorld) -> None:
    world.api.deny_key(TEST_KEY, models=("gemini-2.5-flash",))
    diagnosis = await world.backend(GEMINI_DEFAULT_MODEL="gemini-2.5-flash").diagnose()
    failed = [c for c in diagnosis.checks if not c.ok]
    assert [c.name for c in failed] == ["call"], diagnosis.lines()
    assert "the key may not call gemini-2.5-flash: gemini-api failed: HTTP 403 PERMISSION_DENIED" in failed[0].detail
    assert TEST_KEY not in failed[0].detail
    assert sorted(r.kind for r in world.api.requests) == ["denied", "models"]


async def test_doctor_reports_a_missing_key_and_stops_there(world: ApiWorld) -> None:
    diagnosis = await world.backend(GEMINI_API_KEY=None).diagnose()
    assert not diagnosis.ok
    assert [c.name for c in diagnosis.checks] == ["google-genai", "credentials"]
    assert world.api.requests == []


async def test_doctor_reports_an_unreachable_endpoint(world: ApiWorld) -> None:
    endpoint = f"http://127.0.0.1:{_closed_port()}"
    diagnosis = await world.backend(GOOGLE_GEMINI_BASE_URL=endpoint).diagnose()
    failed = [c for c in diagnosis.checks if not c.ok]
    assert [c.name for c in failed] == ["endpoint"] and endpoint in failed[0].detail


async def test_doctor_proves_the_key_is_accepted_and_names_the_fix_when_it_is_not(world: ApiWorld) -> None:
    world.api.reject_key(TEST_KEY)
    diagnosis = await world.backend().diagnose()
    failed = [c for c in diagnosis.checks if not c.ok]
    assert [c.name for c in failed] == ["endpoint"]
    assert "HTTP 400 INVALID_ARGUMENT: API key not valid" in failed[0].detail
    assert "set a valid GEMINI_API_KEY (https://aistudio.google.com/apikey)" in failed[0].detail
    assert TEST_KEY not in failed[0].detail


async def test_doctor_reports_a_default_model_the_endpoint_does_not_list(world: ApiWorld) -> None:
    diagnosis = await world.backend(GEMINI_DEFAULT_MODEL="gemini-0-nonexistent").diagnose()
    failed = [c for c in diagnosis.checks if not c.ok]
    assert [c.name for c in failed] == ["default model"]
    assert failed[0].detail == (
        "gemini-0-nonexistent is not in the endpoint's model list: set GEMINI_DEFAULT_MODEL to a model gemini-models "
        "lists"
    )


async def test_a_stopped_emulator_is_unreachable_for_the_doctor(world: ApiWorld) -> None:
    with FakeGeminiApi() as other:
        base = other.base_url
    diagnosis = await world.backend(GOOGLE_GEMINI_BASE_URL=base).diagnose()
    assert not diagnosis.ok


def test_help_names_the_options_and_the_credentials(world: ApiWorld) -> None:
    text = world.backend().help()
    for word in ("GEMINI_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI", "effort", "mode plan", "jsonSchema", "conversationId"):
        assert word in text
