"""SDK and transport exceptions -> the relay's typed RunFailed, with the API's own status and message.

The message keeps the HTTP code and the API status token (`HTTP 429 RESOURCE_EXHAUSTED: …`) because the capacity
classifier reads exactly those words to decide whether the fallback model may retry.
"""

from __future__ import annotations

import importlib
from typing import Any

from google.genai import errors as genai_errors

from gemini_relay.backends.advice import BAD_RESPONSE, api_status_advice
from gemini_relay.backends.api.common import COMMAND
from gemini_relay.core.vocabulary import FailureReason
from gemini_relay.errors import RunFailed

RETRYABLE_STATUS = frozenset({429, 500, 503, 504})
_MESSAGE_CHARS = 600


def _transport_errors() -> tuple[type[BaseException], ...]:
    """The HTTP client's connection-level errors (the SDK uses httpx2, or httpx when only that is installed)."""
    found: list[type[BaseException]] = [OSError]
    for module in ("httpx2", "httpx"):
        try:
            error: Any = getattr(importlib.import_module(module), "TransportError", None)
        except ImportError:
            continue
        if isinstance(error, type) and issubclass(error, BaseException):
            found.append(error)
    return tuple(found)


TRANSPORT_ERRORS = _transport_errors()


def from_api_error(exc: genai_errors.APIError, *, partial_text: str = "") -> RunFailed:
    code = int(exc.code) if isinstance(exc.code, int) else None
    status = str(exc.status) if exc.status else ""
    message = _one_line(str(exc.message or "") or str(exc))
    quota = code == 429 or status == "RESOURCE_EXHAUSTED"
    head = f"HTTP {code}" if code else "error"
    text = f"{COMMAND} failed: {head}{' ' + status if status else ''}: {message}"
    return RunFailed(
        text,
        reason=FailureReason.QUOTA_EXHAUSTED if quota else FailureReason.BACKEND_ERROR,
        partial_text=partial_text,
        retryable=code in RETRYABLE_STATUS if code is not None else None,
        http_status=code,
        recovery=api_status_advice(code, status, message),
    )


def from_transport_error(exc: BaseException, endpoint: str, *, partial_text: str = "") -> RunFailed:
    return _passing(
        f"{COMMAND} could not reach {endpoint}: {_detail(exc)}",
        "Check the network, or GOOGLE_GEMINI_BASE_URL when it points the relay at another endpoint.",
        partial_text,
    )


def from_bad_response(exc: BaseException, *, partial_text: str = "") -> RunFailed:
    message = f"{COMMAND} failed: the API sent a response the SDK could not read ({_detail(exc)})"
    return _passing(message, BAD_RESPONSE, partial_text)


def _passing(message: str, recovery: str, partial_text: str) -> RunFailed:
    """A backend error that is likely to pass: worth a retry."""
    return RunFailed(
        message,
        reason=FailureReason.BACKEND_ERROR,
        partial_text=partial_text,
        retryable=True,
        recovery=recovery,
    )


def _detail(exc: BaseException) -> str:
    return _one_line(str(exc)) or type(exc).__name__


def _one_line(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= _MESSAGE_CHARS else flat[: _MESSAGE_CHARS - 1] + "…"
