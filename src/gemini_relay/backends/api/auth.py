"""Credentials and endpoint for the Gemini API, read from `Settings.env` (never os.environ), and the SDK client.

The SDK would otherwise read the process environment itself; every value it needs is passed explicitly so a test
world (or a supervisor with a scrubbed environment) gets exactly what its settings say.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gemini_relay.errors import BackendUnavailable

if TYPE_CHECKING:
    from google import genai

GEMINI_ENDPOINT = "https://generativelanguage.googleapis.com/"
GEMINI_API_VERSION = "v1beta"  # the preview models and responseJsonSchema live here; the SDK's default is v1
VERTEX_API_VERSION = "v1beta1"
_TRUE = ("1", "true", "yes", "on")

MISSING_KEY = (
    "The api backend needs a Gemini API key, and neither GEMINI_API_KEY nor GOOGLE_API_KEY is set. Create a key at "
    "https://aistudio.google.com/apikey and set GEMINI_API_KEY in the MCP server's environment, or use Vertex AI "
    "with GOOGLE_GENAI_USE_VERTEXAI=true, GOOGLE_CLOUD_PROJECT and GOOGLE_CLOUD_LOCATION."
)
MISSING_VERTEX = (
    "GOOGLE_GENAI_USE_VERTEXAI is set, but Vertex AI needs GOOGLE_CLOUD_PROJECT and GOOGLE_CLOUD_LOCATION (with "
    "Application Default Credentials: `gcloud auth application-default login`) or a Vertex API key in "
    "GOOGLE_API_KEY."
)


@dataclass(frozen=True)
class ApiAuth:
    """Who the relay is to the API and where it sends requests. `repr` never shows the key."""

    api_key: str | None
    key_source: str | None  # the variable the key came from
    vertex: bool
    project: str | None
    location: str | None
    base_url: str | None  # None: the SDK's own Vertex endpoint for the location

    def __repr__(self) -> str:
        return f"ApiAuth({self.describe()}, endpoint={self.endpoint})"

    @property
    def endpoint(self) -> str:
        """Where requests go, safe to print (the key travels in a header, never in the URL)."""
        if self.base_url:
            return self.base_url
        return f"Vertex AI ({self.location or 'global'})"

    def describe(self) -> str:
        """One line naming the credential without revealing it: at most the key's last 4 characters."""
        if self.vertex and self.project and not self.api_key:
            return f"Vertex AI project {self.project}, location {self.location} (Application Default Credentials)"
        if self.api_key:
            tail = self.api_key[-4:] if len(self.api_key) >= 12 else ""
            shown = f"…{tail}" if tail else "set"
            where = "Vertex AI express mode" if self.vertex else "Gemini API"
            return f"{self.key_source} {shown} ({where})"
        return "no credentials"

    def client(self) -> genai.Client:
        """A new SDK client; the caller keeps a reference for as long as requests run (the SDK closes it on GC)."""
        from google import genai  # noqa: PLC0415 - the SDK loads only when the api backend is used (common.py)
        from google.genai import types  # noqa: PLC0415

        options = types.HttpOptions(
            base_url=self.base_url,
            api_version=VERTEX_API_VERSION if self.vertex else GEMINI_API_VERSION,
        )
        if self.vertex and self.project and not self.api_key:
            return genai.Client(vertexai=True, project=self.project, location=self.location, http_options=options)
        return genai.Client(vertexai=self.vertex, api_key=self.api_key, http_options=options)


def resolve_auth(env: Mapping[str, str]) -> ApiAuth:
    """The credentials in `env`, or BackendUnavailable naming the variables to set."""
    key, source = _api_key(env)
    vertex = _text(env, "GOOGLE_GENAI_USE_VERTEXAI").lower() in _TRUE
    if vertex:
        project = _text(env, "GOOGLE_CLOUD_PROJECT") or None
        location = _text(env, "GOOGLE_CLOUD_LOCATION") or None
        if not key and not (project and location):
            raise BackendUnavailable(MISSING_VERTEX)
        base = _text(env, "GOOGLE_VERTEX_BASE_URL") or None
        # Express mode (a Vertex key) goes to the global endpoint; project/location pick the SDK's regional one.
        return ApiAuth(key, source, True, None if key else project, None if key else location, base)
    if not key:
        raise BackendUnavailable(MISSING_KEY)
    base_url = _text(env, "GOOGLE_GEMINI_BASE_URL") or GEMINI_ENDPOINT
    return ApiAuth(key, source, False, None, None, base_url)


def _api_key(env: Mapping[str, str]) -> tuple[str | None, str | None]:
    # GOOGLE_API_KEY wins when both are set, as it does in the SDK.
    for name in ("GOOGLE_API_KEY", "GEMINI_API_KEY"):
        value = _text(env, name)
        if value:
            return value, name
    return None, None


def _text(env: Mapping[str, str], name: str) -> str:
    return env.get(name, "").strip()
