"""Lines no JSON-RPC peer should send, each with what it is owed: the same list is sent over stdio and HTTP."""

from __future__ import annotations

from typing import Any

PARSE, INVALID = -32700, -32600
Expected = tuple[str, Any, Any]  # ("error", code, id) | ("result", id, None) | ("drop", None, None)
HUGE = b"9" * 5000  # past Python's 4,300-digit limit for int(); the SDK's parser refuses it too


def error(code: int, request_id: Any = None) -> Expected:
    return ("error", code, request_id)


def result(request_id: Any) -> Expected:
    return ("result", request_id, None)


DROP: Expected = ("drop", None, None)
LINES: list[tuple[str, bytes, Expected]] = [
    ("a 5,000-digit id", b'{"jsonrpc":"2.0","id":' + HUGE + b',"method":"ping"}', error(PARSE)),
    ("a 5,000-digit id first", b'{"id":' + HUGE + b',"jsonrpc":"2.0","method":"ping"}', error(PARSE)),
    ("a 5,000-digit number in params", b'{"jsonrpc":"2.0","id":21,"method":"ping","params":{"n":' + HUGE + b"}}",
     error(PARSE, 21)),
    ("a 4,300-digit id, which the SDK reads", b'{"jsonrpc":"2.0","id":' + b"9" * 4300 + b',"method":"ping"}',
     result(int("9" * 4300))),
    ("a byte that is not UTF-8 in a string", b'{"jsonrpc":"2.0","id":22,"method":"ping","params":{"x":"\xff"}}',
     error(PARSE, 22)),
    ("bytes that are not UTF-8", b"\xff\xfe\x00garbage", error(PARSE)),
    ("a UTF-8 byte order mark", b'\xef\xbb\xbf{"jsonrpc":"2.0","id":23,"method":"ping"}', result(23)),
    ("a lone surrogate as id", b'{"jsonrpc":"2.0","id":"\\ud800","method":"ping"}', error(PARSE)),
    ("a lone surrogate in params", b'{"jsonrpc":"2.0","id":32,"method":"ping","params":{"x":"a\\uDFFF"}}',
     error(PARSE, 32)),
    ("a surrogate pair as id", b'{"jsonrpc":"2.0","id":"\\ud83d\\ude00","method":"ping"}', result("\U0001f600")),
    ("NaN as id", b'{"jsonrpc":"2.0","id":NaN,"method":"ping"}', error(PARSE)),
    ("Infinity as id", b'{"jsonrpc":"2.0","id":-Infinity,"method":"ping"}', error(PARSE)),
    ("NaN in params", b'{"jsonrpc":"2.0","id":29,"method":"ping","params":{"x":NaN}}', error(PARSE, 29)),
    ("1e400 as id", b'{"jsonrpc":"2.0","id":1e400,"method":"ping"}', error(INVALID)),
    ("a float id", b'{"jsonrpc":"2.0","id":1.5,"method":"tools/list"}', error(INVALID)),
    ("a float id with no fraction", b'{"jsonrpc":"2.0","id":2.0,"method":"tools/list"}', error(INVALID)),
    ("true as id", b'{"jsonrpc":"2.0","id":true,"method":"ping"}', error(INVALID)),
    ("null as id", b'{"jsonrpc":"2.0","id":null,"method":"ping"}', error(INVALID)),
    ("an object as id", b'{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}', error(INVALID)),
    ("an array as id", b'{"jsonrpc":"2.0","id":[1],"method":"ping"}', error(INVALID)),
    ("params nested 100,000 deep", b'{"jsonrpc":"2.0","id":24,"method":"ping","params":{"a":' + b"[" * 100_000
     + b"]" * 100_000 + b"}}", error(INVALID, 24)),
    ("only brackets, 100,000 deep", b"[" * 100_000 + b"]" * 100_000, error(INVALID)),
    ("not JSON", b"not json", error(PARSE)),
    ("cut short", b'{"jsonrpc":"2.0","id":9,"method":"tools/list"', error(PARSE, 9)),
    ("a batch", b'[{"jsonrpc":"2.0","id":30,"method":"ping"}]', error(INVALID)),
    ("an empty array", b"[]", error(INVALID)),
    ("a number", b"42", error(INVALID)),
    ("a method that is a number", b'{"jsonrpc":"2.0","id":26,"method":3}', error(INVALID, 26)),
    ("no method", b'{"jsonrpc":"2.0","id":27}', error(INVALID, 27)),
    ("JSON-RPC 1.0", b'{"jsonrpc":"1.0","id":"x","method":"tools/list"}', error(INVALID, "x")),
    ("params that are an array", b'{"jsonrpc":"2.0","id":28,"method":"tools/list","params":[1]}', error(INVALID, 28)),
    ("params that are null, as if omitted", b'{"jsonrpc":"2.0","id":33,"method":"ping","params":null}', result(33)),
    ("a notification with a number as method", b'{"jsonrpc":"2.0","method":5}', error(INVALID)),
    ("an unknown notification", b'{"jsonrpc":"2.0","method":"notifications/whatever"}', DROP),
    ("a response nobody asked for", b'{"jsonrpc":"2.0","id":31,"result":{}}', DROP),
    ("a malformed response", b'{"jsonrpc":"2.0","id":1.5,"error":"x"}', DROP),
    ("an empty line", b"", DROP),
    ("blanks", b" \t \r", DROP),
]  # fmt: skip
