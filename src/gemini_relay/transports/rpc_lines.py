"""What a JSON-RPC message must be before the SDK sees it, checked on the raw bytes of a stdio line or an HTTP body.

The SDK's parser takes some lines for what they are not: an id that is a float, true, null or an object turns a
request into a notification (nobody answers it), NaN and Infinity pass as numbers, bytes that are not UTF-8 are
replaced silently, and a 5,000-digit id breaks every later step. Here each of those gets JSON-RPC's answer: -32700
(Parse error) when the text is not JSON, -32600 (Invalid Request) when it is JSON but not one request or
notification; with the id when it is readable, else null. A leading UTF-8 byte order mark is dropped (RFC 8259
lets a parser ignore it). Responses are never answered (that could start a loop between two peers).

Nothing heavy is imported: the stdio front uses this before the SDK has loaded.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
BOM = b"\xef\xbb\xbf"
RequestId = str | int
# The id of a text no parser took: only a top-level `"id"` before the first nested value is trusted.
_LEADING_ID = re.compile(
    r'^\s*\{(?:\s*"(?:jsonrpc|method)"\s*:\s*"[^"\\]*"\s*,)*\s*"id"\s*:\s*(-?\d+|"[^"\\]*")\s*[,}]'
)


@dataclass(frozen=True)
class Refusal:
    """The error response a message gets instead of reaching the SDK."""

    request_id: RequestId | None
    code: int
    message: str

    def wire(self) -> bytes:
        error = {"code": self.code, "message": self.message}
        return json.dumps({"jsonrpc": "2.0", "id": self.request_id, "error": error}).encode() + b"\n"


class _NotJson(ValueError):
    pass


def vet(raw: bytes, parse_limit: int | None = None, *, responses: bool = False) -> str | Refusal:
    """The message's text for the SDK, or the error it is owed. Past `parse_limit` bytes only the encoding is
    checked (the SDK parses it; see rpc_envelope for what it refuses), so a big line is not parsed twice.
    With `responses` (HTTP, where every POST gets an HTTP answer anyway) a malformed response is refused too."""
    if raw.startswith(BOM):
        raw = raw[len(BOM) :]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        replaced = raw.decode("utf-8", errors="replace")
        return Refusal(
            readable_id(replaced), PARSE_ERROR, f"Parse error: not UTF-8 (byte 0x{raw[exc.start]:02x} at {exc.start})"
        )
    if parse_limit is not None and len(raw) > parse_limit:
        return text
    try:
        value = json.loads(text, parse_constant=_refuse_constant)
    except RecursionError:
        return Refusal(readable_id(text), INVALID_REQUEST, "Invalid Request: the message nests too deeply")
    except ValueError as exc:
        return Refusal(readable_id(text), PARSE_ERROR, f"Parse error: {_reason(exc)}")
    if _lone_surrogate(text, value):
        return Refusal(readable_id(text), PARSE_ERROR, "Parse error: a string holds a lone UTF-16 surrogate (\\udXXX)")
    refusal = envelope_refusal(value, responses=responses)
    return text if refusal is None else refusal


def envelope_refusal(value: Any, *, responses: bool = False) -> Refusal | None:
    """None for a request, a notification or a response (the SDK's); else why `value` is none of them."""
    if isinstance(value, list):
        return Refusal(None, INVALID_REQUEST, "Invalid Request: batches are not supported; send one message a line")
    if not isinstance(value, dict):
        return Refusal(None, INVALID_REQUEST, f"Invalid Request: a message is a JSON object, not {_kind(value)}")
    if "result" in value or "error" in value:
        problem = _response_problem(value) if responses else None
        return None if problem is None else Refusal(None, INVALID_REQUEST, f"Invalid Request: {problem}")
    request_id = value.get("id")
    if "id" in value and id_of(value) is None:
        return Refusal(
            None, INVALID_REQUEST, f"Invalid Request: the id is {_kind(request_id)}, not a string or an integer"
        )
    problem = _envelope_problem(value)
    return None if problem is None else Refusal(request_id, INVALID_REQUEST, f"Invalid Request: {problem}")


def _envelope_problem(message: dict[str, Any]) -> str | None:
    if message.get("jsonrpc") != "2.0":
        return 'jsonrpc must be "2.0"'
    if not isinstance(message.get("method"), str):
        return "method must be a string" if "method" in message else "method is missing"
    if message.get("params") is not None and not isinstance(message["params"], dict):  # null: as if omitted
        return f"params must be an object, not {_kind(message['params'])}"
    return None


def _response_problem(message: dict[str, Any]) -> str | None:
    if message.get("jsonrpc") != "2.0":
        return 'jsonrpc must be "2.0"'
    if "result" in message and "error" in message:
        return "a response carries result or error, not both"
    error = message.get("error", {"code": 0, "message": ""})
    if not (isinstance(error, dict) and _is_int(error.get("code")) and isinstance(error.get("message"), str)):
        return "error must be an object with an integer code and a string message"
    if id_of(message) is None and not (message.get("id", 0) is None and "error" in message):
        return "a response's id is a string or an integer (null only for an error)"
    return None


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def id_of(message: dict[str, Any]) -> RequestId | None:
    """The message's id when it is one JSON-RPC allows here: a string or an integer (not a boolean)."""
    value = message.get("id")
    if isinstance(value, bool) or not isinstance(value, str | int):
        return None
    return value if isinstance(value, int) or _encodable(value) else None


def readable_id(text: str) -> RequestId | None:
    """The id at the head of a text no parser took (cut short, say), when it is plain to read."""
    match = _LEADING_ID.match(text)
    if match is None:
        return None
    try:
        value = json.loads(match.group(1))
    except ValueError:  # an integer of more digits than int() takes
        return None
    return value if isinstance(value, str | int) else None


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _lone_surrogate(text: str, value: Any) -> bool:
    """Whether a string escape left half a UTF-16 pair: no UTF-8 can carry it (the SDK would fail to answer)."""
    if "\\ud" not in text.lower():
        return False
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return True
    except RecursionError:  # nested within what json.loads takes but past what json.dumps does: the SDK refuses it
        return False
    return False


def _refuse_constant(name: str) -> Any:
    raise _NotJson(f"{name} is not JSON")


def _reason(exc: ValueError) -> str:
    if isinstance(exc, _NotJson):
        return str(exc)
    if isinstance(exc, json.JSONDecodeError):
        return f"{exc.msg} at {exc.pos}"
    return "a number has more digits than the server reads (4300)"  # int()'s limit; the SDK's parser refuses too


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    for kind, name in (
        (bool, "a boolean"),
        (int, "an integer"),
        (float, "a float"),
        (str, "a string"),
        (list, "an array"),
    ):
        if isinstance(value, kind):
            return name
    return "an object"
