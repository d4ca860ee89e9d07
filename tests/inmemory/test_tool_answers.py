"""What the server answers by itself, in memory: the default tool list, its schemas and annotations, the prompts,
the failure shapes of a bad call (a JSON-RPC error for an unknown tool or prompt, the validation shape for bad
arguments), and the in-process tools (ping, fetch-chunk, models, and what a missing CLI or key makes them say).
Over stdio, tests/test_server_surface.py shows the same server identifying itself and the CLI's own help."""

from __future__ import annotations

import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPError

from gemini_relay.tools.registry import registry
from tests.inmemory.conftest import InMemory, text_of
from tests.inmemory.test_misconfigured import started

DEFAULT_TOOLS = registry(test_tools=False)  # the default tools, in registry order

pytestmark = pytest.mark.anyio


async def test_tools_list_shows_the_eleven_tools_in_registry_order(relay: InMemory) -> None:
    async with relay.client() as client:
        tools = (await client.list_tools()).tools
    assert [t.name for t in tools] == [t.name for t in DEFAULT_TOOLS]
    assert len(tools) == 11


async def test_every_input_schema_is_a_closed_object_with_required_and_defaults(relay: InMemory) -> None:
    async with relay.client() as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    for tool in tools.values():
        schema = tool.input_schema
        assert set(schema) == {"type", "properties", "required", "additionalProperties"}
        assert schema["type"] == "object"
        assert schema["additionalProperties"] is False
    ask = tools["gemini-ask"].input_schema
    assert ask["required"] == ["prompt"]
    assert ask["properties"]["changeMode"]["default"] is False
    assert ask["properties"]["effort"]["enum"] == ["low", "medium", "high"]
    plan = tools["gemini-plan"].input_schema
    assert plan["properties"]["effort"]["default"] == "high"
    assert plan["properties"]["includeUsage"]["default"] is True
    assert tools["gemini-conversations"].input_schema["properties"]["limit"] == {
        "default": 20,  # the name, default and bounds say it all: no description (tool budget)
        "maximum": 100,
        "minimum": 1,
        "type": "integer",
    }
    assert tools["gemini-models"].input_schema["required"] == []


async def test_annotations_are_honest_about_side_effects(relay: InMemory) -> None:
    async with relay.client() as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    assert tools["gemini-ping"].annotations is not None and tools["gemini-ping"].annotations.read_only_hint
    cancel = tools["gemini-cancel"].annotations
    assert cancel is not None and cancel.destructive_hint and not cancel.read_only_hint
    ask = tools["gemini-ask"].annotations
    assert ask is not None and not ask.read_only_hint and ask.open_world_hint


async def test_the_timeout_test_tool_is_registered_only_with_test_tools_enabled(relay: InMemory) -> None:
    async with relay.client(GEMINI_MCP_TEST_TOOLS="1") as client:
        names = [t.name for t in (await client.list_tools()).tools]
        result = await client.call_tool("gemini-timeout-test", {"duration": 10})
    assert names[-1] == "gemini-timeout-test"
    assert len(names) == 12
    assert "Timeout test completed successfully!" in text_of(result)


async def test_an_unregistered_tool_is_a_json_rpc_error_not_a_result(relay: InMemory) -> None:
    async with relay.client() as client:
        with pytest.raises(MCPError, match="Unknown tool: nope"):
            await client.call_tool("nope", {})
        with pytest.raises(MCPError, match="Unknown tool: gemini-timeout-test"):
            await client.call_tool("gemini-timeout-test", {"duration": 10})


async def test_a_missing_required_argument_fails_with_the_validation_shape(relay: InMemory) -> None:
    async with relay.client() as client:
        result = await client.call_tool("gemini-ask", {})
    assert result.is_error
    assert text_of(result) == "Error executing gemini-ask: Invalid arguments for gemini-ask: prompt: Field required"


async def test_an_unknown_argument_is_refused_and_names_what_is_accepted(relay: InMemory) -> None:
    async with relay.client() as client:
        result = await client.call_tool("gemini-ping", {"message": "hi"})
    assert result.is_error
    assert text_of(result).startswith("Error executing gemini-ping: Invalid arguments for gemini-ping: message: ")
    assert "accepted: prompt" in text_of(result)


async def test_a_wrong_type_and_an_out_of_range_value_are_refused(relay: InMemory) -> None:
    async with relay.client() as client:
        wrong = await client.call_tool("gemini-ask", {"prompt": "x", "changeMode": "yes"})
        low = await client.call_tool("gemini-conversations", {"limit": 0})
        bad_enum = await client.call_tool("gemini-ask", {"prompt": "x", "effort": "max"})
    assert wrong.is_error and "changeMode: Input should be a valid boolean" in text_of(wrong)
    assert low.is_error and "limit: Input should be greater than or equal to 1" in text_of(low)
    assert bad_enum.is_error and "effort: Input should be 'low', 'medium' or 'high'" in text_of(bad_enum)
    assert relay.backend.specs == []  # nothing ran


async def test_ping_answers_pong_in_process_and_echoes_a_prompt(relay: InMemory) -> None:
    async with relay.client() as client:
        plain = await client.call_tool("gemini-ping", {})
        echoed = await client.call_tool("gemini-ping", {"prompt": "hello there"})
    assert text_of(plain) == "Pong!"
    assert text_of(echoed) == "hello there"
    assert relay.backend.specs == []


async def test_fetch_chunk_with_an_unknown_key_is_a_clear_error(relay: InMemory) -> None:
    async with relay.client() as client:
        missing = await client.call_tool("gemini-fetch-chunk", {"cacheKey": "0123abcd", "chunkIndex": 1})
        malformed = await client.call_tool("gemini-fetch-chunk", {"cacheKey": "../etc", "chunkIndex": 1})
    assert missing.is_error
    assert "0123abcd not found or expired" in text_of(missing)
    assert malformed.is_error and "cacheKey: String should match pattern" in text_of(malformed)


async def test_every_tool_is_also_a_prompt_with_arguments_from_its_schema(relay: InMemory) -> None:
    async with relay.client() as client:
        prompts = {p.name: p for p in (await client.list_prompts()).prompts}
        got = await client.get_prompt(
            "gemini-ask", {"prompt": "Explain @src/index.ts", "model": "pro", "changeMode": "true", "sandbox": "false"}
        )
    assert list(prompts) == [t.name for t in DEFAULT_TOOLS]
    ask_args = {a.name: a.required for a in prompts["gemini-ask"].arguments or []}
    assert ask_args["prompt"] is True and ask_args["model"] is False
    assert len(got.messages) == 1 and got.messages[0].role == "user"
    content = got.messages[0].content
    assert isinstance(content, types.TextContent)
    assert content.text == "Use the gemini-ask tool: Explain @src/index.ts (model: pro) [changeMode]"


async def test_an_unknown_prompt_is_a_json_rpc_error(relay: InMemory) -> None:
    async with relay.client() as client:
        with pytest.raises(MCPError, match="Unknown prompt: nope"):
            await client.get_prompt("nope", {})


async def test_image_on_the_gemini_backend_without_a_key_says_what_it_needs(relay: InMemory) -> None:
    async with relay.client() as client:  # the in-memory world sets no GEMINI_API_KEY or GOOGLE_API_KEY
        result = await client.call_tool("gemini-image", {"prompt": "a red square"})
    assert result.is_error
    assert text_of(result).startswith(
        "Error executing gemini-image: gemini-image needs a Gemini API key (GEMINI_API_KEY) or the agy backend"
    )


async def test_models_lists_ids_aliases_and_the_default(relay: InMemory) -> None:
    async with started(relay, scripted=False) as client:  # the Gemini CLI backend's own listing
        result = await client.call_tool("gemini-models", {})
    text = text_of(result)
    assert "gemini-3.1-pro-preview" in text and "pro → gemini-3.1-pro-preview" in text
    assert "Default: gemini-2.5-pro" in text


async def test_without_the_cli_the_server_still_serves_discovery_and_explains_the_fix(relay: InMemory) -> None:
    missing = str(relay.base / "nowhere" / "gemini")
    async with started(relay, {"GEMINI_CLI_PATH": missing}, scripted=False) as client:
        tools = (await client.list_tools()).tools
        ask = await client.call_tool("gemini-ask", {"prompt": "hi"})
        doctor = await client.call_tool("gemini-doctor", {})
    assert len(tools) == 11
    assert ask.is_error
    assert "The Gemini CLI (gemini) was not found" in text_of(ask)
    assert "npm install -g @google/gemini-cli" in text_of(ask)
    assert "Verdict: ❌ Action needed" in text_of(doctor)


async def test_the_server_identifies_itself_and_declares_tools_prompts_and_logging(relay: InMemory) -> None:
    async with relay.client() as client:
        info = client.server_info
        caps = client.server_capabilities
    assert info is not None and info.name == "gemini-relay"
    assert caps is not None and caps.tools is not None and caps.prompts is not None and caps.logging is not None


async def test_the_discover_result_carries_the_instructions_with_the_jobs_lines_when_jobs_are_on(
    relay: InMemory,
) -> None:
    async with relay.session(mode="auto", overrides={"GEMINI_RELAY_TOOLSETS": "jobs"}) as client:
        discovered = await client.session.discover()
    assert discovered.instructions is not None
    assert "gemini-wait" in discovered.instructions and "gemini-status" in discovered.instructions
