"""The conformance fixtures' prompts, resources and completions (tests/conformance/fixtures/, which
server/fixture_hook.py imports when GEMINI_RELAY_FIXTURES names them), and the rule that they exist
only with GEMINI_MCP_TEST_TOOLS=conformance: without it tools/list, prompts/list and the capabilities are exactly
what they were (the committed surface snapshot, tests/inmemory/test_surface.py, pins the bytes)."""

from __future__ import annotations

import json
import logging

import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPError

from tests.conformance.fixtures import SERVE
from tests.conformance.fixtures.catalog import PROMPTS
from tests.conformance.fixtures.tools import FIXTURES
from tests.inmemory.conftest import InMemory

pytestmark = pytest.mark.anyio
ON = SERVE
FIXTURE_NAMES = {fixture.name for fixture in FIXTURES} | {prompt.name for prompt in PROMPTS}


def wire(tools: types.ListToolsResult) -> list[str]:
    return [json.dumps(tool.model_dump(by_alias=True, mode="json", exclude_none=True)) for tool in tools.tools]


async def test_without_the_fixtures_the_surface_is_unchanged_and_names_none_of_them(relay: InMemory) -> None:
    async with relay.client(GEMINI_MCP_TEST_TOOLS="1") as plain:
        tools, prompts = await plain.list_tools(), await plain.list_prompts()
        resources = await plain.list_resources()
        caps = plain.server_capabilities
    async with relay.client(**ON) as fixtures:
        with_fixtures = await fixtures.list_tools()
    listed = wire(with_fixtures)
    assert listed[: len(tools.tools)] == wire(tools)  # the relay's own tools, byte for byte, first
    assert [json.loads(t)["name"] for t in listed[len(tools.tools) :]] == [f.name for f in FIXTURES]
    assert not FIXTURE_NAMES & ({t.name for t in tools.tools} | {p.name for p in prompts.prompts})
    assert resources.resources == [] and caps.completions is None
    assert caps.resources is not None and caps.resources.subscribe is False


async def test_the_fixture_prompts_follow_the_relays_own(relay: InMemory) -> None:
    async with relay.client(**ON) as client:
        listed = await client.list_prompts()
        got = await client.get_prompt("test_prompt_with_arguments", {"arg1": "a", "arg2": "b"})
        with pytest.raises(MCPError) as missing:
            await client.get_prompt("test_prompt_with_arguments", {"arg1": "a"})
    names = [p.name for p in listed.prompts]
    assert names[-len(PROMPTS) :] == [p.name for p in PROMPTS] and names[0].startswith("gemini-")
    assert isinstance(got.messages[0].content, types.TextContent)
    assert got.messages[0].content.text == "Prompt with arguments: arg1='a', arg2='b'"
    assert missing.value.error.code == types.INVALID_PARAMS and "arg2" in missing.value.error.message


async def test_resources_read_as_text_blob_or_from_the_template_and_an_unknown_one_is_an_error(
    relay: InMemory,
) -> None:
    async with relay.client(**ON) as client:
        text = await client.read_resource("test://static-text")
        blob = await client.read_resource("test://static-binary")
        templated = await client.read_resource("test://template/42/data")
        templates = await client.list_resource_templates()
        with pytest.raises(MCPError) as unknown:
            await client.read_resource("test://nothing-here")
        caps = client.server_capabilities
    assert isinstance(text.contents[0], types.TextResourceContents)
    assert text.contents[0].text == "This is the content of the static text resource."
    assert isinstance(blob.contents[0], types.BlobResourceContents) and blob.contents[0].mime_type == "image/png"
    assert isinstance(templated.contents[0], types.TextResourceContents)
    assert json.loads(templated.contents[0].text)["id"] == "42"
    assert templates.resource_templates[0].uri_template == "test://template/{id}/data"
    assert unknown.value.error.code == types.INVALID_PARAMS
    assert unknown.value.error.data == {"uri": "test://nothing-here"}
    assert caps.completions is not None and caps.resources is not None and caps.resources.subscribe is True


async def test_a_completion_offers_the_values_that_start_with_what_was_typed(relay: InMemory) -> None:
    async with relay.client(**ON) as client:
        ref = types.PromptReference(type="ref/prompt", name="test_prompt_with_arguments")
        done = await client.complete(ref, {"name": "arg1", "value": "ar"})
    assert done.completion.values == ["arg1", "arg2"] and done.completion.has_more is False


@pytest.mark.parametrize("module", ["", "gemini_relay_no_such_fixtures"])
async def test_without_the_fixtures_module_the_server_says_so_and_serves_the_test_tool(
    relay: InMemory, module: str, caplog: pytest.LogCaptureFixture
) -> None:
    """An installed wheel has no tests/: GEMINI_MCP_TEST_TOOLS=conformance there is said at start, not a crash."""
    async with relay.client(GEMINI_MCP_TEST_TOOLS="1") as plain:
        expected = [tool.name for tool in (await plain.list_tools()).tools]
    with caplog.at_level(logging.WARNING, logger="gemini_relay"):
        async with relay.client(GEMINI_MCP_TEST_TOOLS="conformance", GEMINI_RELAY_FIXTURES=module) as client:
            names = [tool.name for tool in (await client.list_tools()).tools]
            prompts = {prompt.name for prompt in (await client.list_prompts()).prompts}
            resources = await client.list_resources()
    assert names == expected and "gemini-timeout-test" in names
    assert not FIXTURE_NAMES & (set(names) | prompts) and resources.resources == []
    assert "GEMINI_MCP_TEST_TOOLS=conformance: the conformance fixtures are not available" in caplog.text
    assert "GEMINI_RELAY_FIXTURES" in caplog.text
