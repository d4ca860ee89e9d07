"""The MCP surface over stdio, end to end: the real `python -m gemini_relay` identifies itself, lists the default
tools and answers gemini-help with the real Gemini CLI's own help. What the server answers by itself (schemas,
annotations, prompts, failure shapes, the in-process tools) is proved in memory: tests/inmemory/test_tool_answers.py;
gemini-doctor against the real CLI: tests/test_server_doctor.py."""

from __future__ import annotations

import mcp_types as types
import pytest

from gemini_relay.tools.registry import registry
from tests.harness import Relay

DEFAULT_TOOLS = registry(test_tools=False)  # the default tools, in registry order

pytestmark = pytest.mark.anyio


def text_of(result: types.CallToolResult) -> str:
    """The reply's one text block; anything after it may only be resource_link blocks (files the run wrote)."""
    assert result.content
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    assert all(isinstance(extra, types.ResourceLink) for extra in result.content[1:]), result.content
    return block.text


async def test_over_stdio_the_server_identifies_itself_lists_its_tools_and_gives_the_clis_own_help(
    relay: Relay,
) -> None:
    async with relay.client() as client:
        info = client.server_info
        caps = client.server_capabilities
        tools = (await client.list_tools()).tools
        ping = await client.call_tool("gemini-ping", {})
        help_result = await client.call_tool("gemini-help", {})
    assert info is not None and info.name == "gemini-relay"
    assert caps is not None and caps.tools is not None and caps.prompts is not None and caps.logging is not None
    assert [t.name for t in tools] == [t.name for t in DEFAULT_TOOLS]
    assert text_of(ping) == "Pong!"
    assert not help_result.is_error
    assert "--output-format" in text_of(help_result)  # the pinned CLI's `--help`
    assert relay.api.requests == []
