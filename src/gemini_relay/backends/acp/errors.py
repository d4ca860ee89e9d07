"""ACP JSON-RPC errors -> a classified RunFailed, worded like the cold path's (gemini_cli_errors) so the tools,
the model fallback and backends/capacity.py treat a warm failure exactly like a cold one. Pure."""

from __future__ import annotations

import json

from gemini_relay.backends.acp.wire import AcpRpcError
from gemini_relay.core.vocabulary import FailureReason
from gemini_relay.errors import InputError, RunFailed

_AUTH_CODE = -32000
_NOT_FOUND_WORDING = ("Session not found", "Invalid session identifier", "No previous sessions found")


def prompt_failure(error: AcpRpcError, *, partial_text: str = "") -> RunFailed:
    """The failure for an error answer to `session/prompt` (the CLI puts the HTTP status in `code`)."""
    text = _api_message((error.details or error.message or "no details").strip())
    status = error.code if 400 <= error.code <= 599 else None
    if status == 429:
        failure = RunFailed(
            f"Gemini API quota or rate limit exhausted (HTTP 429): {text}",
            reason=FailureReason.QUOTA_EXHAUSTED,
            retryable="daily" not in text.lower() and "PerDay" not in text,
        )
    elif status in (500, 502, 503, 504):
        label = "is overloaded or unavailable" if status != 500 else "had an internal error"
        failure = RunFailed(f"The Gemini API {label} (HTTP {status}): {text}", retryable=True)
    elif status in (401, 403):
        failure = RunFailed(f"The Gemini API refused the credentials (HTTP {status}): {text}")
    elif status == 404:
        failure = RunFailed(
            f"Model not found (HTTP 404): {text.rstrip('.')}. See gemini-models for the ids this backend accepts."
        )
    elif status is not None:
        failure = RunFailed(f"The Gemini API rejected the request (HTTP {status}): {text}")
    elif error.code == _AUTH_CODE:
        failure = auth_failure(error)
    else:
        failure = RunFailed(f"gemini --acp failed: {text}")
    failure.http_status = status
    failure.partial_text = partial_text
    return failure


def _api_message(text: str) -> str:
    """The API's own message when the CLI passes the raw error body (`{"error":{"message":…}}`) as the message:
    the cold path's stream-json carries just that message, and both paths must word a failure alike."""
    if not text.startswith("{"):
        return text
    try:
        body = json.loads(text)
    except ValueError:
        return text
    inner = body.get("error") if isinstance(body, dict) else None
    message = inner.get("message") if isinstance(inner, dict) else None  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
    return message.strip() if isinstance(message, str) and message.strip() else text


def auth_failure(error: AcpRpcError) -> RunFailed:
    detail = (error.details or error.message).strip().rstrip(".")
    return RunFailed(
        "Gemini CLI authentication failed"
        + (f": {detail}" if detail else "")
        + ". Set GEMINI_API_KEY (or GOOGLE_API_KEY / Vertex AI settings) in the server's env, "
        "or run `gemini` once in a terminal to sign in.",
    )


def session_failure(error: AcpRpcError, conversation_id: str | None) -> RunFailed | InputError:
    """The failure for an error answer to `session/new` or `session/load`."""
    if error.code == _AUTH_CODE:
        return auth_failure(error)
    text = error.details or error.message
    if conversation_id is not None and any(w in text for w in _NOT_FOUND_WORDING):
        return RunFailed(
            f"Unknown conversationId {conversation_id}: the Gemini CLI has no such saved session for this project. "
            "Omit conversationId to start a new conversation, or pick one from gemini-conversations."
        )
    return RunFailed(f"gemini --acp could not open the session: {text.strip() or error.code}")
