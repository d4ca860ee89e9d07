"""May this key call this model at this endpoint? One `countTokens` call (`POST {base}/{version}/models/{model}:
countTokens`): it costs no token, and the API guards it as it guards `generateContent` — an unreachable endpoint, a
key it refuses, a key that may not call the model (403) fail it as they would fail an ask. A models listing proves
less: it answers a key that may not generate.

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
CHECK_TIMEOUT = 15.0  # one small POST; past this the endpoint is not usable for calls either
_DETAIL_CHARS = 300
_PROBE = {"contents": [{"role": "user", "parts": [{"text": "ping"}]}]}


@dataclass(frozen=True)
class KeyCheck:
    ok: bool
    detail: str  # `http://127.0.0.1:8080 let the key call gemini-2.5-pro …` / what went wrong, with the status
    status: int | None = None  # the HTTP status of a refusal
    denied: bool = False  # the key is valid but may not call the model (HTTP 401/403 other than a bad key)


async def check_key(
    key: str | None, model: str, *, base_url: str | None, version: str | None, bearer: bool = False
) -> KeyCheck:
    """`bearer`: the key goes as `Authorization: Bearer` (the Gemini CLI's GEMINI_API_KEY_AUTH_MECHANISM=bearer);
    `key` None: no key is sent (a gateway that needs none)."""
    base = (base_url or DEFAULT_ENDPOINT).rstrip("/")
    url = f"{base}/{version or DEFAULT_VERSION}/models/{model}:countTokens"
    headers = {} if key is None else {"Authorization": f"Bearer {key}"} if bearer else {"x-goog-api-key": key}
    import httpx2  # here: the relay host imports this module and boots the warm CLI sooner without it (~40 ms)

    try:
        async with httpx2.AsyncClient(timeout=CHECK_TIMEOUT, follow_redirects=False) as client:
            response = await client.post(url, json=_PROBE, headers=headers)
    except httpx2.TimeoutException:
        return KeyCheck(False, f"{base} did not answer a countTokens call within {CHECK_TIMEOUT:g}s")
    except httpx2.TransportError as exc:
        return KeyCheck(False, f"{base} could not be reached: {_one_line(str(exc)) or type(exc).__name__}")
    if response.status_code < 400:
        return KeyCheck(True, f"{base} let the key call {model} (a countTokens call, no tokens)")
    status, message = _error(response)
    code = response.status_code
    bad_key = "API_KEY_INVALID" in response.text or "api key not valid" in message.lower()
    if code in (401, 403) and not bad_key:
        said = f"{base}: the key may not call {model}: HTTP {code}{status}: {message}"
        return KeyCheck(False, said, code, denied=True)
    return KeyCheck(False, f"{base} refused a countTokens call on {model}: HTTP {code}{status}: {message}", code)


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
