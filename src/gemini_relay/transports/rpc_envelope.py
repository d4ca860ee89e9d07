"""A JSON-RPC message the SDK cannot parse gets a JSON-RPC error instead of silence.

Most bad lines never reach the SDK (rpc_lines vets them first); what does is a line too long to be parsed twice,
or JSON the SDK's parser refuses although Python's takes it (nested past its limit). The SDK's stdio reader hands
such a line to the session as an exception, and the session drops it: the client would wait out its own timeout.
Here the id is recovered from the validation error (which carries the parsed object, or the raw line when the JSON
itself was refused) and the message is answered with -32600 (Invalid Request) or -32700 (Parse error), with id
null when none is readable. Responses (they carry `result` or `error`) are never answered.
"""

from __future__ import annotations

import json
from typing import Any

import mcp_types as types
from pydantic import ValidationError

from gemini_relay.transports.rpc_lines import RequestId, id_of, readable_id

__all__ = ["error_reply_for"]

_MAX_SHOWN = 3


def error_reply_for(exc: Exception) -> types.JSONRPCError | None:
    """The error response for a message the SDK could not parse, else None (a response, or not a parse failure)."""
    if not isinstance(exc, ValidationError):
        return None
    errors = exc.errors()
    raw = next((e["input"] for e in errors if e["type"] == "json_invalid" and isinstance(e["input"], str)), None)
    if raw is not None:
        detail = next(e["msg"] for e in errors if e["type"] == "json_invalid")
        return _reply_for_text(raw, detail)
    envelope: Any = next((e["input"] for e in errors if isinstance(e["input"], dict)), None)
    if envelope is None:
        return _reply(None, types.INVALID_REQUEST, "Invalid Request: a message is one JSON object")
    if "result" in envelope or "error" in envelope:
        return None  # a malformed response: answering it could start a loop
    shown = "; ".join(f"{'.'.join(str(p) for p in e['loc'][1:]) or 'message'}: {e['msg']}" for e in errors[:_MAX_SHOWN])
    return _reply(id_of(envelope), types.INVALID_REQUEST, f"Invalid Request: {shown}")


def _reply_for_text(raw: str, detail: str) -> types.JSONRPCError | None:
    try:
        value = json.loads(raw)
    except RecursionError:
        return _reply(
            readable_id(raw), types.INVALID_REQUEST, f"Invalid Request: the message nests too deeply ({detail})"
        )
    except ValueError:
        return _reply(readable_id(raw), types.PARSE_ERROR, f"Parse error: {detail}")
    if not isinstance(value, dict):
        return _reply(None, types.INVALID_REQUEST, f"Invalid Request: {detail}")
    if "result" in value or "error" in value:
        return None
    # JSON all the same, which the SDK's parser refused: nested past its limit, say.
    return _reply(id_of(value), types.INVALID_REQUEST, f"Invalid Request: the SDK's parser refused it ({detail})")  # pyright: ignore[reportUnknownArgumentType]


def _reply(request_id: RequestId | None, code: int, message: str) -> types.JSONRPCError:
    return types.JSONRPCError(jsonrpc="2.0", id=request_id, error=types.ErrorData(code=code, message=message))
