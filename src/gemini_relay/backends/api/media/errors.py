"""Media failures with their own clear messages: safety blocks, free-tier `limit: 0` walls, expired file uris.

Each of these looks like a generic API error otherwise (a 429 that retrying never fixes, a 403/404 that names no
entity), so the message says what it is and what to do.
"""

from __future__ import annotations

import re

from gemini_relay.backends.advice import api_status_advice
from gemini_relay.backends.api.common import COMMAND
from gemini_relay.core.vocabulary import FailureReason
from gemini_relay.errors import RunFailed

_LIMIT_ZERO = re.compile(r"limit:\s*0\b")
_FILE_DENIED = "permission to access the File"
_MODEL_NAMED = re.compile(r"\bmodels?\b", re.IGNORECASE)
_MESSAGE_CHARS = 600


class MediaApiError(Exception):
    """A non-2xx answer of a media REST call (or the SDK's APIError, translated)."""

    def __init__(self, code: int, status: str, message: str) -> None:
        super().__init__(f"HTTP {code} {status}: {message}")
        self.code, self.status, self.message = code, status, message


def quota_wall(model: str | None, message: str) -> RunFailed:
    return RunFailed(
        f"{COMMAND}: {model or 'this model'} has no free-tier quota (every quota is `limit: 0`): image, video and "
        "music models need an API key on a billed project. Retrying will not help.",
        reason=FailureReason.QUOTA_EXHAUSTED,
        retryable=False,
        http_status=429,
        recovery="Enable billing for the key's project in Google AI Studio (https://aistudio.google.com/), or use "
        f"a key of a billed project. Upstream said: {_short(message)}",
    )


def expired_file(uris: list[str], message: str, code: int) -> RunFailed:
    named = ", ".join(uris) if uris else "a files/… reference"
    return RunFailed(
        f"{COMMAND}: the Files API reference {named} has expired or does not exist (uploads are kept ~48 h).",
        reason=FailureReason.BACKEND_ERROR,
        retryable=False,
        http_status=code,
        recovery=f"Upload the file again with gemini-files (action upload) and pass the new uri. Upstream said: "
        f"{_short(message)}",
    )


def safety_block(what: str, detail: str) -> RunFailed:
    return RunFailed(
        f"{COMMAND}: the {what} was blocked by the safety filter ({_short(detail)}). Nothing was written.",
        reason=FailureReason.BACKEND_ERROR,
        retryable=False,
        recovery="Rephrase the prompt (or change the reference images); the same request will be blocked again.",
    )


def from_media_error(exc: MediaApiError, *, model: str | None, file_uris: list[str]) -> RunFailed:
    """The clear message for the failures above; the generic `HTTP <code> <STATUS>: …` otherwise."""
    if exc.code == 429 and _LIMIT_ZERO.search(exc.message):
        return quota_wall(model, exc.message)
    if _FILE_DENIED in exc.message:
        found = re.search(r"File ([a-z0-9-]+)", exc.message)
        return expired_file([f"files/{found.group(1)}"] if found else file_uris, exc.message, exc.code)
    if exc.code == 404 and file_uris and not _MODEL_NAMED.search(exc.message):
        # The Interactions API answers a gone files/… uri with a bare "Requested entity was not found.".
        return expired_file(file_uris, exc.message, exc.code)
    quota = exc.code == 429 or exc.status == "RESOURCE_EXHAUSTED"
    return RunFailed(
        f"{COMMAND} failed: HTTP {exc.code}{' ' + exc.status if exc.status else ''}: {_short(exc.message)}",
        reason=FailureReason.QUOTA_EXHAUSTED if quota else FailureReason.BACKEND_ERROR,
        retryable=exc.code in (429, 500, 503, 504),
        http_status=exc.code,
        recovery=api_status_advice(exc.code, exc.status, exc.message),
    )


def _short(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= _MESSAGE_CHARS else flat[: _MESSAGE_CHARS - 1] + "…"
