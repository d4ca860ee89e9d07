"""Reading a media tool's answer: its text, its resource links to files on disk, its facts (structuredContent)."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import mcp_types as types
from mcp import Client


def text(result: types.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


def links(result: types.CallToolResult) -> list[types.ResourceLink]:
    return [b for b in result.content if isinstance(b, types.ResourceLink)]


def facts(result: types.CallToolResult) -> dict[str, Any]:
    data: dict[str, Any] | None = result.structured_content  # the text is for a person: the files, then a line of facts
    assert data is not None, text(result)
    return data


async def call_ok(client: Client, tool: str, args: dict[str, Any]) -> types.CallToolResult:
    result = await client.call_tool(tool, args)
    assert not result.is_error, text(result)
    return result


def assert_files_linked(result: types.CallToolResult, suffix: str, count: int = 1) -> list[Path]:
    found = links(result)
    assert len(found) == count, result.content
    paths = []
    for link in found:
        path = Path(unquote(urlsplit(str(link.uri)).path))
        assert str(link.uri).startswith("file:///") and path.is_file() and path.suffix == suffix
        assert f"Saved to: {path}" in text(result) and f"]({link.uri})" in text(result)
        paths.append(path)
    return paths
