"""Is this key accepted at this endpoint? One models listing (`GET {base}/{version}/models?pageSize=1`): it costs no
token, and it fails for the same reasons a call would — an unreachable endpoint, a key the API refuses.

For a backend that talks to the Gemini API without google-genai in this process (the Gemini CLI, whose requests go
to the same endpoint with the same key). The key travels in a header, never in the URL, and never in a message.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import httpx2

DEFAULT_ENDPOINT = "https://generativelanguage.googleapis.com"
DEFAULT_VERSION = "v1beta"
CHECK_TIMEOUT = 15.0  # one small GET; past this the endpoint is not usable for calls either
_DETAIL_CHARS = 300


@dataclass(frozen=True)
class KeyCheck:
    ok: bool
    detail: str  # `http://127.0.0.1:8080 answered a models listing` / what went wrong, with the status
    status: int | None = None  # the HTTP status of a refusal


async def check_key(key: str, *, base_url: str | None, version: str | None, bearer: bool = False) -> KeyCheck:
    """`bearer`: the key goes as `Authorization: Bearer` (the Gemini CLI's GEMINI_API_KEY_AUTH_MECHANISM=bearer)."""
    base = (base_url or DEFAULT_ENDPOINT).rstrip("/")
    url = f"{base}/{version or DEFAULT_VERSION}/models"
    headers = {"Authorization": f"Bearer {key}"} if bearer else {"x-goog-api-key": key}
    import httpx2  # here: the relay host imports this module and boots the warm CLI sooner without it (~40 ms)

    try:
        async with httpx2.AsyncClient(timeout=CHECK_TIMEOUT, follow_redirects=False) as client:
            response = await client.get(url, params={"pageSize": "1"}, headers=headers)
    except httpx2.TimeoutException:
        return KeyCheck(False, f"{base} did not answer a models listing within {CHECK_TIMEOUT:g}s")
    except httpx2.TransportError as exc:
        return KeyCheck(False, f"{base} could not be reached: {_one_line(str(exc)) or type(exc).__name__}")
    if response.status_code < 400:
        return KeyCheck(True, f"{base} accepted the key (a models listing, no tokens)")
    status, message = _error(response)
    return KeyCheck(
        False, f"{base} refused the key: HTTP {response.status_code}{status}: {message}", response.status_code
    )


def _error(response: httpx2.Response) -> tuple[str, str]:
    try:
        body = response.json()
    except ValueError:
        body = None
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, dict):
        return "", _one_line(response.text) or response.reason_phrase
    status = f" {error['status']}" if isinstance(error.get("status"), str) else ""
    return status, _one_line(str(error.get("message") or "")) or response.reason_phrase


def _one_line(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= _DETAIL_CHARS else flat[: _DETAIL_CHARS - 1] + "…"
