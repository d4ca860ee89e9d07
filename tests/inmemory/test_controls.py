"""Per-call controls, in memory: timeoutSeconds is the run's deadline on every run-shaping tool, bounded by the
server's GEMINI_MCP_TIMEOUT (shown as the schema's maximum) and named when it ends a run; continueLatest continues
the newest conversation of this project and is refused when there is none or with an explicit id. The api backend
(google-genai on the emulator) is served here too: its conversations are the relay's own."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from tests.fakes.fake_gemini_api import FakeGeminiApi
from tests.inmemory.conftest import InMemory, on_the_api, text_of
from tests.inmemory.scripted import Script

pytestmark = pytest.mark.anyio

# Every run-shaping tool and arguments that make it run (review tools need a git diff: see test_deadlines).
RUN_TOOLS: dict[str, dict[str, Any]] = {
    "gemini-ask": {"prompt": "go"},
    "gemini-plan": {"task": "a plan"},
    "gemini-brainstorm": {"prompt": "names"},
    "gemini-search": {"query": "news"},
    "gemini-structured": {"prompt": "who?", "schema": {"type": "object"}},
}
ALL = "review,jobs"


@pytest.mark.parametrize("tool", sorted(RUN_TOOLS))
async def test_timeout_seconds_becomes_the_runs_deadline(relay: InMemory, tool: str) -> None:
    if tool == "gemini-structured":
        relay.backend.queue(Script(deltas=("{}",)))
    async with relay.client(GEMINI_RELAY_TOOLSETS=ALL) as client:
        result = await client.call_tool(tool, {**RUN_TOOLS[tool], "timeoutSeconds": 42})
    assert not result.is_error, text_of(result)
    assert relay.backend.specs[-1].timeout_seconds == 42


async def test_without_timeout_seconds_a_run_gets_the_servers_maximum(relay: InMemory) -> None:
    async with relay.client(GEMINI_MCP_TIMEOUT="2") as client:
        await client.call_tool("gemini-ask", {"prompt": "go"})
    assert relay.backend.specs[-1].timeout_seconds == 120


@pytest.mark.parametrize("tool", [*sorted(RUN_TOOLS), "gemini-review", "gemini-run"])
async def test_timeout_seconds_above_the_servers_maximum_is_refused_as_an_invalid_argument_before_anything_runs(
    relay: InMemory, tool: str
) -> None:
    args = RUN_TOOLS.get(tool, {"prompt": "go"} if tool == "gemini-run" else {})
    async with relay.client(GEMINI_MCP_TIMEOUT="1", GEMINI_RELAY_TOOLSETS=ALL) as client:
        result = await client.call_tool(tool, {**args, "timeoutSeconds": 61})
    assert result.is_error
    assert text_of(result).startswith(
        f"Error executing {tool}: Invalid arguments for {tool}: timeoutSeconds: 61 is above this server's maximum of "
        "60 seconds (GEMINI_MCP_TIMEOUT"
    ), text_of(result)
    assert relay.backend.specs == []


async def test_the_schema_shows_the_servers_maximum_on_every_run_shaping_tool(relay: InMemory) -> None:
    async with relay.client(GEMINI_MCP_TIMEOUT="3", GEMINI_RELAY_TOOLSETS=ALL) as client:
        listed = {tool.name: tool.input_schema for tool in (await client.list_tools()).tools}
    bounded = {name for name, schema in listed.items() if "timeoutSeconds" in schema["properties"]}
    assert bounded >= {*RUN_TOOLS, "gemini-review", "gemini-run"}
    for name in bounded:
        prop = listed[name]["properties"]["timeoutSeconds"]
        assert prop["maximum"] == 180 and prop["exclusiveMinimum"] == 0, name


async def test_a_run_past_its_timeout_seconds_fails_with_reason_timeout_naming_that_limit(relay: InMemory) -> None:
    relay.backend.queue(Script(deltas=("partial",), hold=anyio.Event()))
    async with relay.client() as client:
        result = await client.call_tool("gemini-ask", {"prompt": "go", "timeoutSeconds": 0.5})
    assert result.is_error
    text = text_of(result)
    assert text.startswith("Error executing gemini-ask: gemini timed out after 0.5s"), text
    assert "The limit hit was this call's timeoutSeconds (0.5 s)." in text


async def test_a_run_past_the_servers_maximum_names_gemini_mcp_timeout(relay: InMemory) -> None:
    relay.backend.queue(Script(deltas=("partial",), hold=anyio.Event()))
    async with relay.client(GEMINI_MCP_TIMEOUT="0.01") as client:  # 0.6 s
        result = await client.call_tool("gemini-ask", {"prompt": "go"})
    assert result.is_error
    assert "The limit hit was the server's maximum GEMINI_MCP_TIMEOUT (0.6 s)." in text_of(result)


async def test_continue_latest_continues_the_newest_conversation_of_this_project(relay: InMemory) -> None:
    relay.backend.listed_cwd = None
    async with relay.client() as client:
        await client.call_tool("gemini-ask", {"prompt": "first"})
        second = await client.call_tool("gemini-ask", {"prompt": "second"})
        result = await client.call_tool("gemini-ask", {"prompt": "third", "continueLatest": True})
    assert not result.is_error, text_of(result)
    newest = text_of(second).rsplit("conversationId: ", 1)[1].split()[0]
    assert [s.conversation_id for s in relay.backend.specs] == [None, None, newest]
    assert f"conversationId: {newest}" in text_of(result)


async def test_continue_latest_skips_conversations_of_other_projects(relay: InMemory) -> None:
    async with relay.client() as client:  # the scripted listing says every conversation ran in /project
        await client.call_tool("gemini-ask", {"prompt": "first"})
        result = await client.call_tool("gemini-ask", {"prompt": "again", "continueLatest": True})
    assert result.is_error
    text = text_of(result)
    assert f"continueLatest: no saved scripted conversation of {relay.project} to continue" in text
    assert len(relay.backend.specs) == 1


async def test_continue_latest_is_refused_when_there_is_no_conversation(relay: InMemory) -> None:
    async with relay.client(GEMINI_RELAY_TOOLSETS="jobs") as client:
        for tool in ("gemini-ask", "gemini-run"):
            result = await client.call_tool(tool, {"prompt": "go", "continueLatest": True})
            assert result.is_error
            assert "continueLatest: no saved scripted conversation" in text_of(result), tool
    assert relay.backend.specs == []


async def test_continue_latest_with_a_conversation_id_is_refused(relay: InMemory) -> None:
    async with relay.client() as client:
        result = await client.call_tool("gemini-ask", {"prompt": "go", "continueLatest": True, "conversationId": "x"})
    assert result.is_error
    assert "continueLatest and conversationId cannot be combined" in text_of(result)


async def test_gemini_run_continues_the_latest_conversation_too(relay: InMemory) -> None:
    relay.backend.listed_cwd = None
    async with relay.client(GEMINI_RELAY_TOOLSETS="jobs") as client:
        await client.call_tool("gemini-ask", {"prompt": "first"})
        started = await client.call_tool("gemini-run", {"prompt": "more", "continueLatest": True, "timeoutSeconds": 30})
        assert not started.is_error, text_of(started)
        job = started.structured_content
        assert job is not None
        with anyio.fail_after(10):
            await client.call_tool("gemini-wait", {"jobId": job["job_id"], "wait": 10})
    first, second = relay.backend.specs
    assert first.conversation_id is None and second.conversation_id is not None
    assert second.timeout_seconds == 30


async def test_on_the_api_backend_continue_latest_continues_the_relays_newest_conversation(
    relay: InMemory, emulator: FakeGeminiApi
) -> None:
    async with relay.client(**on_the_api(emulator)) as client:
        refused = await client.call_tool("gemini-ask", {"prompt": "hello", "continueLatest": True})
        await client.call_tool("gemini-ask", {"prompt": "older thread"})
        newest = text_of(await client.call_tool("gemini-ask", {"prompt": "newest thread"}))
        result = await client.call_tool("gemini-ask", {"prompt": "and again", "continueLatest": True})
    assert refused.is_error and "continueLatest: no saved" in text_of(refused), text_of(refused)
    assert not result.is_error, text_of(result)
    thread = newest.rsplit("conversationId: ", 1)[1].split()[0]
    assert f"conversationId: {thread} " in text_of(result)


async def test_on_the_api_backend_a_stalled_answer_past_its_timeout_seconds_fails_naming_that_limit(
    relay: InMemory, emulator: FakeGeminiApi
) -> None:
    async with relay.client(**on_the_api(emulator)) as client:
        result = await client.call_tool("gemini-ask", {"prompt": "[[fake:stall]] wait", "timeoutSeconds": 1})
    assert result.is_error
    text = text_of(result)
    assert "timed out after 1s" in text and "The limit hit was this call's timeoutSeconds (1 s)." in text, text
