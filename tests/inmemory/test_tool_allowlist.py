"""GEMINI_RELAY_TOOLS: a per-tool allowlist beside the toolsets. The server lists, prompts and describes only the
tools it names (in the registry's order), refuses a call to any other as an unknown tool, and a name that is no
tool the enabled toolsets serve is a configuration problem the server says, as it does every other."""

from __future__ import annotations

import pytest
from mcp.shared.exceptions import MCPError

from gemini_relay.config import Settings
from gemini_relay.errors import ConfigError
from gemini_relay.tools.registry import check_allowlist
from tests.inmemory.conftest import InMemory, text_of
from tests.inmemory.test_misconfigured import started

pytestmark = pytest.mark.anyio


async def test_the_allowlist_filters_tools_list_prompts_and_instructions(relay: InMemory) -> None:
    async with relay.client(GEMINI_RELAY_TOOLS="gemini-ping, GEMINI-ASK") as client:
        tools = [t.name for t in (await client.list_tools()).tools]
        prompts = [p.name for p in (await client.list_prompts()).prompts]
        instructions = client.instructions or ""
    assert tools == ["gemini-ask", "gemini-ping"]  # the registry's order, whatever the variable's
    assert prompts == tools
    assert "- gemini-ask:" in instructions and "gemini-plan" not in instructions


async def test_a_call_to_a_tool_left_out_is_refused_as_unknown(relay: InMemory) -> None:
    async with relay.client(GEMINI_RELAY_TOOLS="gemini-ping") as client:
        pong = await client.call_tool("gemini-ping", {})
        with pytest.raises(MCPError, match="Unknown tool: gemini-ask"):
            await client.call_tool("gemini-ask", {"prompt": "hi"})
    assert text_of(pong) == "Pong!"


async def test_the_allowlist_picks_from_the_enabled_toolsets(relay: InMemory) -> None:
    env = {"GEMINI_RELAY_TOOLSETS": "jobs", "GEMINI_RELAY_TOOLS": "gemini-run,gemini-status,gemini-cancel"}
    async with relay.client(**env) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    assert sorted(tools) == ["gemini-cancel", "gemini-run", "gemini-status"]
    assert "jobId" in tools["gemini-cancel"].input_schema["properties"]  # the jobs toolset's gemini-cancel


async def test_an_unknown_tool_name_is_a_configuration_problem_the_server_says(relay: InMemory) -> None:
    async with started(relay, {"GEMINI_RELAY_TOOLS": "gemini-ask,gemini-aks"}) as client:
        instructions = client.instructions or ""
        tools = [t.name for t in (await client.list_tools()).tools]
        ask = await client.call_tool("gemini-ask", {"prompt": "hi"})
    assert instructions.startswith("⚠️ gemini-relay is misconfigured")
    assert "GEMINI_RELAY_TOOLS names unknown tool(s) gemini-aks" in instructions
    assert "gemini-doctor" in tools and len(tools) == 11  # the allowlist is left out, so gemini-doctor can explain
    assert ask.is_error and "GEMINI_RELAY_TOOLS" in text_of(ask)


def test_a_tool_of_a_toolset_that_is_off_names_the_toolset_to_enable(relay: InMemory) -> None:
    settings = Settings.from_env({**relay.env, "GEMINI_RELAY_TOOLS": "gemini-ask,gemini-review,gemini-status"})
    with pytest.raises(ConfigError) as raised:
        check_allowlist(settings)
    assert raised.value.variable == "GEMINI_RELAY_TOOLS"
    message = str(raised.value)
    assert "gemini-review, which needs the review toolset in GEMINI_RELAY_TOOLSETS" in message
    assert "gemini-status, which needs the jobs or media toolset" in message
    assert "unknown tool(s)" not in message
