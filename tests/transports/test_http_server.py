"""The server over Streamable HTTP against the real Gemini CLI and the API emulator: the same answers as over stdio,
both protocol generations on one server, and a shutdown that lets calls finish and leaves jobs running. (The
discover result's instructions with the jobs lines: tests/inmemory/test_tool_answers.py.)"""

from __future__ import annotations

import json
import re
import signal
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from gemini_relay.backends.backend_registry import entries
from gemini_relay.server.surface import instructions_for
from gemini_relay.tools.registry import registry
from tests.executables import relay_command
from tests.fakes.fake_gemini_api import SLOW_CHUNKS, echo_text
from tests.harness import Relay
from tests.test_server_surface import text_of
from tests.transports.http_server import HttpServer, bare_env, http_server, serve_http

DEFAULT_TOOLS = registry(test_tools=False)  # the default tools, in registry order
GEMINI = next(e for e in entries() if e.name == "gemini")  # the harness's backend

pytestmark = pytest.mark.anyio

LEGACY = "2025-11-25"
MODERN = "2026-07-28"
EVENT_TIMEOUT = 30.0
_CONVERSATION = re.compile(r"(🧵 conversationId: )\S+")


_RECEIPT = re.compile(r"\n\n— [^\n]+$")  # the receipt line (format.receipt_line)


def wire(result: types.CallToolResult) -> dict[str, Any]:
    """The result as a client sees it on the wire, with the per-run conversation id and receipt masked."""
    dumped: dict[str, Any] = result.model_dump(mode="json", by_alias=True, exclude_none=True)
    dumped.get("structuredContent", {}).pop("receipt", None)  # another run: its own job id and times
    masked: dict[str, Any] = json.loads(_CONVERSATION.sub(r"\1<id>", json.dumps(dumped, ensure_ascii=False)))
    for block in [*masked["content"], masked.get("structuredContent", {})]:
        if "text" in block:
            block["text"] = _RECEIPT.sub("\n\n— <receipt>", block["text"])
    return masked


async def _describe(client: Client) -> tuple[str | None, str | None, list[str], str]:
    tools = [tool.name for tool in (await client.list_tools()).tools]
    ping = text_of(await client.call_tool("gemini-ping", {"prompt": "gen"}))
    return client.protocol_version, client.instructions, tools, ping


@asynccontextmanager
async def _stdio(relay: Relay, mode: str) -> AsyncIterator[Client]:
    """A client of a fresh `python -m gemini_relay` over stdio in protocol `mode`."""
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "gemini_relay"], env=relay.env, cwd=str(relay.project)
    )
    with relay.stderr_path.open("a", encoding="utf-8") as errlog:
        async with Client(stdio_client(params, errlog=errlog), mode=mode) as client:
            yield client


async def test_a_call_over_http_answers_exactly_what_the_same_call_over_stdio_answers(relay: Relay) -> None:
    calls = [("gemini-ping", {}), ("gemini-ping", {"prompt": "héllo"}), ("gemini-ask", {"prompt": "same answer?"})]
    with http_server(relay) as server:
        async with server.client() as client:
            over_http = [wire(await client.call_tool(name, args)) for name, args in calls]
    found = {}
    async with _stdio(relay, "legacy") as client:  # the stdio door, legacy generation: the calls and its surface
        over_stdio = [wire(await client.call_tool(name, args)) for name, args in calls]
        found["legacy"] = await _describe(client)
    async with _stdio(relay, "auto") as client:  # and the modern generation over stdio too
        found["auto"] = await _describe(client)
    assert over_http == over_stdio
    expected = f"Gemini response:\n{echo_text('same answer?')}\n\n🧵 conversationId: <id>"
    assert over_http[2]["content"][0]["text"].startswith(expected)
    assert not over_http[2].get("isError")
    # Both protocol generations are served over stdio.
    assert found["legacy"][0] == LEGACY and found["auto"][0] == MODERN
    assert (
        found["legacy"][1:]
        == found["auto"][1:]
        == (instructions_for(DEFAULT_TOOLS, GEMINI), [t.name for t in DEFAULT_TOOLS], "gen")
    )


@pytest.fixture(scope="module")
def answering(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServer]:
    """One server with a configured token for the cases it answers by itself (no upstream call): each server start
    costs the suite over a second of CPU."""
    base = tmp_path_factory.mktemp("answering")
    with serve_http(bare_env(base), base, base / "server-stderr.log", token="tok-123") as running:
        yield running


async def test_both_protocol_generations_are_served_on_one_http_server_at_once_to_a_client_with_the_token(
    answering: HttpServer,
) -> None:
    expected_tools = [t.name for t in DEFAULT_TOOLS]
    instructions = instructions_for(DEFAULT_TOOLS, GEMINI)
    server = answering  # the SDK client presents the configured token
    async with server.client(mode="legacy") as legacy, server.client(mode="auto") as modern:
        old, new = await _describe(legacy), await _describe(modern)
        again = await _describe(legacy)  # the legacy session survives the stateless client's requests
    with pytest.raises(BaseException):  # noqa: B017 - a 401 surfaces however the SDK wraps it
        async with server.client(token="wrong") as client:
            await client.call_tool("gemini-ping", {})
    assert old == (LEGACY, instructions, expected_tools, "gen")
    assert new == (MODERN, instructions, expected_tools, "gen")
    assert again == old


async def test_a_client_of_an_older_revision_gets_its_revision_and_the_instructions(answering: HttpServer) -> None:
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    answered = {}
    async with httpx2.AsyncClient(timeout=EVENT_TIMEOUT) as http:
        for version in ("2025-06-18", "2025-11-25"):
            init = {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": version,
                    "capabilities": {},
                    "clientInfo": {"name": "old", "version": "1"},
                },
            }
            response = await http.post(answering.url, json=init, headers={**headers, **answering.headers()})
            assert response.status_code == 200
            answered[version] = json.loads(next(x[5:] for x in response.text.splitlines() if x.startswith("data:")))
    for version, data in answered.items():
        assert data["result"]["protocolVersion"] == version
        assert data["result"]["instructions"] == instructions_for(DEFAULT_TOOLS, GEMINI)


def _jobs(relay: Relay) -> list[Path]:
    return sorted((relay.home / ".local" / "state" / "gemini-relay" / "jobs").glob("*/"))


async def _wait_for(condition: Any, what: str) -> None:
    with anyio.move_on_after(EVENT_TIMEOUT):
        while not condition():
            await anyio.sleep(0.05)  # polls the emulator's request log / the server's stderr
    assert condition(), f"timed out waiting for {what}"


async def test_shutdown_lets_a_call_in_flight_finish_and_refuses_new_requests_meanwhile(relay: Relay) -> None:
    with http_server(relay) as server:
        async with server.client() as client:
            await client.list_tools()  # as clients do on connecting (the SDK checks a result against the tool list)
            async with anyio.create_task_group() as tg:
                answers: list[str] = []

                async def ask() -> None:
                    answers.append(
                        text_of(await client.call_tool("gemini-ask", {"prompt": "[[fake:slow:0.3]] finish"}))
                    )

                tg.start_soon(ask)
                await _wait_for(lambda: relay.main_requests(), "the run to reach the API")
                server.proc.send_signal(signal.SIGTERM)
                await _wait_for(lambda: "Received SIGTERM" in relay.stderr(), "the server to begin its shutdown")
                async with httpx2.AsyncClient(timeout=EVENT_TIMEOUT) as http:
                    refused = await http.post(server.url, json={}, headers={"Content-Type": "application/json"})
            code = server.proc.wait(timeout=EVENT_TIMEOUT)
    assert refused.status_code == 503
    assert answers and answers[0].startswith("Gemini response:\n" + "".join(SLOW_CHUNKS))
    assert code == 0


async def test_shutdown_after_the_grace_leaves_the_running_job_to_finish_on_its_own(relay: Relay) -> None:
    with http_server(relay, "--shutdown-grace", "0.2") as server:
        with pytest.raises(BaseException):  # noqa: B017 - the call is cut off with the server, however it surfaces
            async with server.client() as client, anyio.create_task_group() as tg:
                tg.start_soon(client.call_tool, "gemini-ask", {"prompt": "[[fake:slow:0.4]] outlive"})
                await _wait_for(lambda: relay.main_requests(), "the run to reach the API")
                server.proc.send_signal(signal.SIGTERM)
                code = server.proc.wait(timeout=EVENT_TIMEOUT)
                raise RuntimeError("the server stopped")  # end the client here; the call never answers
        assert code == 0
        assert "1 call(s) still running; their jobs continue" in relay.stderr()
    (job,) = _jobs(relay)
    waited = relay_command("wait-job", job.name, "--timeout", "60s", env=relay.env, timeout=90)
    assert (waited.returncode, waited.stdout.strip()) == (0, "done")
    async with relay.client(GEMINI_RELAY_TOOLSETS="jobs") as client:
        status = (await client.call_tool("gemini-status", {"jobId": job.name})).structured_content or {}
    assert status["state"] == "done" and status["result"] == "".join(SLOW_CHUNKS)


async def test_a_misconfigured_http_server_comes_up_and_explains_itself(relay: Relay) -> None:
    said = "GEMINI_MCP_BACKEND='gemni' is not one of:"
    with http_server(relay, GEMINI_MCP_BACKEND="gemni") as server:
        async with server.client() as client:
            instructions = client.instructions or ""
            ask = await client.call_tool("gemini-ask", {"prompt": "hi"})
        assert server.stop() == 0  # SIGTERM stops the idle server at once (the fixture's stop: a bounded wait)
    assert instructions.startswith("⚠️ gemini-relay is misconfigured") and said in instructions
    assert ask.is_error and said in text_of(ask)
    assert f"gemini-relay: {said}" in relay.stderr()
