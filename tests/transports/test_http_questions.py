"""A question the server asks the client during a call (sampling, roots) over Streamable HTTP on the 2025-11-25
revision rides that call's own response stream: a client that never opened the standalone GET stream still gets it,
answers it, and gets the call's result. (Sent on the standalone stream, it was lost whenever the client had not
opened that stream yet, and the call hung: the conformance runner's tools-call-sampling timed out on a loaded run.)"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest

from tests.conformance.fixtures import SERVE
from tests.transports.http_server import ACCEPT, HttpServer, bare_env, serve_http

pytestmark = pytest.mark.anyio

EVENT_TIMEOUT = 30.0
VERSION = "2025-11-25"


@pytest.fixture
def server(tmp_path: Path) -> Iterator[HttpServer]:
    env = {**bare_env(tmp_path), **SERVE}
    with serve_http(env, tmp_path, tmp_path / "server-stderr.log", "--no-auth") as running:
        yield running


async def _session(http: httpx2.AsyncClient, url: str) -> dict[str, str]:
    """Initializes a session declaring sampling and roots; the headers every later request carries."""
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": VERSION,
            "capabilities": {"sampling": {}, "roots": {"listChanged": True}},
            "clientInfo": {"name": "no-get-stream", "version": "1"},
        },
    }
    response = await http.post(url, json=init, headers=ACCEPT)
    assert response.status_code == 200, response.text
    headers = {**ACCEPT, "mcp-session-id": response.headers["mcp-session-id"], "mcp-protocol-version": VERSION}
    done = await http.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers)
    assert done.status_code == 202, done.text
    return headers


async def _messages(lines: AsyncIterator[str]) -> AsyncIterator[dict[str, Any]]:
    async for line in lines:
        if line.startswith("data:") and line[5:].strip():
            yield json.loads(line[5:])


async def _call(server: HttpServer, tool: str, args: dict[str, Any], answer: dict[str, Any]) -> tuple[str, str]:
    """Calls `tool`, answers the first request that arrives on the call's stream with `answer`; (its method, the
    call's text)."""
    asked = ""
    async with httpx2.AsyncClient(timeout=EVENT_TIMEOUT) as http:
        headers = await _session(http, server.url)
        call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": tool, "arguments": args}}
        with anyio.fail_after(EVENT_TIMEOUT):
            async with http.stream("POST", server.url, json=call, headers=headers) as stream:
                async for message in _messages(stream.aiter_lines()):
                    if "method" in message and "id" in message:
                        asked = message["method"]
                        reply = {"jsonrpc": "2.0", "id": message["id"], "result": answer}
                        posted = await http.post(server.url, json=reply, headers=headers)
                        assert posted.status_code == 202, posted.text
                    elif message.get("id") == 2:
                        assert "result" in message, message
                        return asked, message["result"]["content"][0]["text"]
    pytest.fail("the call's stream ended without its result")


async def test_a_sampling_request_rides_the_calls_stream_to_a_client_without_a_get_stream(server: HttpServer) -> None:
    sampled = {"role": "assistant", "content": {"type": "text", "text": "four"}, "model": "m", "stopReason": "endTurn"}
    asked, text = await _call(server, "test_sampling", {"prompt": "2+2?"}, sampled)
    assert asked == "sampling/createMessage"
    assert text == "LLM response: four"


async def test_a_roots_request_rides_the_calls_stream_to_a_client_without_a_get_stream(server: HttpServer) -> None:
    roots = {"roots": [{"uri": "file:///work/a", "name": "a"}]}
    # on 2025-11-25 this fixture asks with a roots/list request (on 2026-07-28, with an input-required result)
    asked, text = await _call(server, "test_input_required_result_list_roots", {}, roots)
    assert asked == "roots/list"
    assert text == "Client roots: file:///work/a"
