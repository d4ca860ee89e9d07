"""A JSON-RPC request the SDK cannot parse, but whose id is readable, gets a JSON-RPC error instead of silence.

The SDK's stdio reader hands a line that fails validation to the session as an exception, and the session drops it:
the client then waits out its own timeout. Here the id is recovered from the validation error (which carries the
parsed object, or the raw line when the JSON itself was refused, e.g. past the parser's nesting limit) and the
request is answered with -32600 (Invalid Request) or -32700 (Parse error). Lines without a readable id, and
responses (they carry `result` or `error`), are left to the SDK as before.
"""

from __future__ import annotations

import json
import re
from typing import Any

import mcp_types as types
from pydantic import ValidationError

__all__ = ["error_reply_for"]

_MAX_SHOWN = 3
# The id of an object whose nesting defeats every parser: only a top-level `"id"` before the first nested value.
_LEADING_ID = re.compile(
    r'^\s*\{(?:\s*"(?:jsonrpc|method)"\s*:\s*"[^"\\]*"\s*,)*\s*"id"\s*:\s*(-?\d+|"[^"\\]*")\s*[,}]'
)


def error_reply_for(exc: Exception) -> types.JSONRPCError | None:
    """The error response for an unparsable request with a readable id, else None."""
    if not isinstance(exc, ValidationError):
        return None
    errors = exc.errors()
    raw = next((e["input"] for e in errors if e["type"] == "json_invalid" and isinstance(e["input"], str)), None)
    if raw is not None:
        request_id, is_json = _id_from_text(raw)
        if request_id is None:
            return None
        detail = next(e["msg"] for e in errors if e["type"] == "json_invalid")
        if is_json:  # valid JSON the SDK's parser refused: nested past its limit
            return _reply(
                request_id, types.INVALID_REQUEST, f"Invalid Request: the message nests too deeply ({detail})"
            )
        return _reply(request_id, types.PARSE_ERROR, f"Parse error: {detail}")
    envelope = next((e["input"] for e in errors if isinstance(e["input"], dict)), None)
    if envelope is None:
        return None
    request_id = _id_of(envelope)  # pyright: ignore[reportUnknownArgumentType]
    if request_id is None:
        return None
    shown = "; ".join(f"{'.'.join(str(p) for p in e['loc'][1:]) or 'message'}: {e['msg']}" for e in errors[:_MAX_SHOWN])
    return _reply(request_id, types.INVALID_REQUEST, f"Invalid Request: {shown}")


def _id_of(envelope: dict[str, Any]) -> str | int | None:
    if "result" in envelope or "error" in envelope:
        return None  # a malformed response: answering it would start a loop
    value = envelope.get("id")
    if isinstance(value, bool) or not isinstance(value, str | int):
        return None
    return value


def _id_from_text(raw: str) -> tuple[str | int | None, bool]:
    """The id, and whether the text is JSON at all (as far as Python's parser can tell)."""
    try:
        value = json.loads(raw)
    except RecursionError:
        match = _LEADING_ID.match(raw)
        return (None if match is None else json.loads(match.group(1))), True
    except ValueError:
        match = _LEADING_ID.match(raw)
        return (None if match is None else json.loads(match.group(1))), False
    return (_id_of(value) if isinstance(value, dict) else None), True  # pyright: ignore[reportUnknownArgumentType]


def _reply(request_id: str | int, code: int, message: str) -> types.JSONRPCError:
    return types.JSONRPCError(jsonrpc="2.0", id=request_id, error=types.ErrorData(code=code, message=message))
