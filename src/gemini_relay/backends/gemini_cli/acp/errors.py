"""ACP JSON-RPC errors -> a classified RunFailed, worded like the cold path's (gemini_cli/errors.py) so the tools,
the model fallback and backends/capacity.py treat a warm failure exactly like a cold one. Pure."""

from __future__ import annotations

import json

from gemini_relay.backends.gemini_cli.acp.wire import AcpRpcError
from gemini_relay.backends.gemini_cli.errors import api_error, auth_failure, clean_detail, generic_failure
from gemini_relay.errors import InputError, RunFailed

_AUTH_CODE = -32000
_NOT_FOUND_WORDING = ("Session not found", "Invalid session identifier", "No previous sessions found")


def prompt_failure(error: AcpRpcError) -> RunFailed:
    """The failure for an error answer to `session/prompt`: classified by the cold path's own rules."""
    raw = (error.details or error.message).strip()
    text = clean_detail(raw) or "no details"
    status = error.code if 400 <= error.code <= 599 else None
    if status == 500 and not _is_api_error_body(raw):
        # The CLI answers `getErrorStatus(error) || 500`: an error without an HTTP status (a model not found, an
        # unparsable response) gets 500 too. Only an API 500 carries the API's error body; cold exits 1 otherwise.
        status = None
    if status is not None:
        failure = api_error(status, text)
    elif error.code == _AUTH_CODE:
        failure = auth_failure((error.details or error.message).strip())
    else:
        failure = generic_failure(text)
    return failure


def _is_api_error_body(text: str) -> bool:
    try:
        body = json.loads(text)
    except ValueError:
        return False
    return isinstance(body, dict) and isinstance(body.get("error"), dict)  # pyright: ignore[reportUnknownMemberType]


def session_failure(error: AcpRpcError, conversation_id: str | None) -> RunFailed | InputError:
    """The failure for an error answer to `session/new` or `session/load`."""
    if error.code == _AUTH_CODE:
        return auth_failure((error.details or error.message).strip())
    text = error.details or error.message
    if conversation_id is not None and any(w in text for w in _NOT_FOUND_WORDING):
        return RunFailed(
            f"Unknown conversationId {conversation_id}: the Gemini CLI has no such saved session for this project. "
            "Omit conversationId to start a new conversation, or pick one from gemini-conversations."
        )
    return RunFailed(f"gemini --acp could not open the session: {text.strip() or error.code}")
