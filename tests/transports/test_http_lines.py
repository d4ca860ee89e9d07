"""Over Streamable HTTP, a POSTed message gets JSON-RPC's answer whatever is wrong with it, as on stdio (HTTP 400,
-32700 or -32600, the id when readable); the session answers the next request. What a refused request carries is
logged escaped, and a flood of refusals is rate-limited: a few lines, then one that says how many were suppressed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from gemini_relay.log import FLOOD_LIMIT
from tests.transports.bad_lines import DROP, INVALID, LINES, PARSE, Expected, error, result
from tests.transports.http_server import HttpServer, bare_env, raw_post, serve_http
from tests.transports.raw_stdio import strict_json

HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
HELLO = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": HELLO}
# Over HTTP an empty body is a message that is not JSON, a malformed response is refused (it loops no peer: the
# answer is the POST's), and the nesting past the SDK parser's limit is its -32700.
OVER_HTTP: dict[str, Expected] = {
    "an empty line": error(PARSE),
    "blanks": error(PARSE),
    "a malformed response": error(INVALID),
}
SDK_ANSWERS = {"params nested 100,000 deep", "only brackets, 100,000 deep"}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServer]:
    base = tmp_path_factory.mktemp("lines")
    with serve_http(bare_env(base), base, base / "server-stderr.log") as running:
        yield running


def answer(response: httpx2.Response) -> dict[str, Any] | None:
    text = response.text
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        data = [line[5:] for line in text.splitlines() if line.startswith("data:")]
        text = data[-1] if data else ""
    return strict_json(text.encode()) if text.strip() else None


def outcome(response: httpx2.Response) -> Expected | str:
    reply = answer(response)
    if reply is None:
        return DROP if response.status_code == 202 else f"HTTP {response.status_code} without a body"
    if "error" in reply:
        return error(reply["error"]["code"], reply["id"])
    return result(reply["id"])


def test_every_bad_body_gets_its_json_rpc_answer_and_the_session_keeps_serving(server: HttpServer) -> None:
    wrong = []
    with httpx2.Client(timeout=60, headers=server.headers()) as http:
        opened = http.post(server.url, content=json.dumps(INIT).encode(), headers=HEADERS)
        session = {**HEADERS, "Mcp-Session-Id": opened.headers["mcp-session-id"], "MCP-Protocol-Version": "2025-11-25"}
        http.post(server.url, content=b'{"jsonrpc":"2.0","method":"notifications/initialized"}', headers=session)
        for what, body, expected in LINES:
            response = http.post(server.url, content=body, headers=session)
            got = outcome(response)
            expected = OVER_HTTP.get(what, expected)
            if what in SDK_ANSWERS:
                ok = got in (expected, error(PARSE))  # the SDK's answer to what it refuses itself: -32700, id null
            else:
                ok = got == expected and (expected[0] != "error" or response.status_code == 400)
            if not ok:
                wrong.append(f"{what}: expected {expected}, got {got} (HTTP {response.status_code})")
            ping = http.post(server.url, content=b'{"jsonrpc":"2.0","id":"p","method":"ping"}', headers=session)
            assert outcome(ping) == result("p"), f"after {what}: {ping.status_code} {ping.text[:200]}"
    assert wrong == []


@pytest.mark.parametrize(
    ("body", "code", "request_id"),
    [
        (b'{"jsonrpc":"2.0","id":' + b"9" * 5000 + b',"method":"tools/list"}', -32700, None),
        (b'{"jsonrpc":"2.0","id":1.5,"method":"tools/list"}', -32600, None),
        (b'{"jsonrpc":"2.0","id":NaN,"method":"tools/list"}', -32700, None),
        (b'{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{"x":"\xff"}}', -32700, 7),
        (b'{"jsonrpc":"2.0","id":8,"method":3}', -32600, 8),
    ],
)
def test_a_stateless_2026_request_gets_the_same_answers(
    server: HttpServer, body: bytes, code: int, request_id: int | None
) -> None:
    modern = {**HEADERS, "MCP-Protocol-Version": "2026-07-28", **server.headers()}
    with httpx2.Client(timeout=60) as http:
        response = http.post(server.url, content=body, headers=modern)
    assert response.status_code == 400
    assert outcome(response) == error(code, request_id)


def test_refused_requests_are_logged_escaped_and_a_flood_of_them_is_summed_up(tmp_path: Path) -> None:
    log = tmp_path / "server-stderr.log"
    hostile = b"evil\x1b[31m.example\x1b]0;pwned\x07\x9b2J" + b"x" * 3000
    flood = 300
    with serve_http(bare_env(tmp_path), tmp_path, log, token="tok") as server:
        assert raw_post(server.port, hostile) == 421
        origin = b"Origin: http://evil\x1b[2J.example\r\n"
        assert raw_post(server.port, f"127.0.0.1:{server.port}".encode(), origin) == 403
        statuses = {raw_post(server.port, hostile) for _ in range(flood)}
        with httpx2.Client(timeout=60) as http:
            statuses |= {http.post(server.url, content=b"{}", headers=HEADERS).status_code for _ in range(flood)}
            # the door still opens: a flood costs the log nothing, and the right token nothing either
            opened = http.post(server.url, content=json.dumps(INIT).encode(), headers={**HEADERS, **server.headers()})
        assert opened.status_code == 200
    assert statuses == {421, 401}
    text = log.read_bytes().decode("utf-8")
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f]", text), "a control character reached the log"
    lines = [line for line in text.splitlines() if not line.startswith("[GMCPT] suppressed")]
    hosts = [line for line in lines if "Refused a request with Host" in line]
    assert len(hosts) == FLOOD_LIMIT and all(len(line) < 300 for line in hosts)
    assert "evil\\x1b[31m.example\\x1b]0;pwned\\x07\\x9b2J" in hosts[0]
    assert 'with Origin "http://evil\\x1b[2J.example" (403)' in text
    tokens = [line for line in lines if "without the right bearer token" in line]
    assert len(tokens) == FLOOD_LIMIT
    assert f"suppressed {flood + 1 - FLOOD_LIMIT} similar lines" in text  # the Host flood, at exit
    assert f"suppressed {flood - FLOOD_LIMIT} similar lines" in text  # the token flood
    assert len(text.splitlines()) < 3 * FLOOD_LIMIT
