"""Reading a media tool's answer: its text, its resource links to files on disk, its facts (structuredContent); and
links planted where the relay writes a file, to show it never writes through them."""

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


PLANTED = b"precious: not an image"


def plant_links(directory: Path, name: str, outside: Path) -> list[Path]:
    """Links named like the file the relay writes and the temporary names it used to write through."""
    directory.mkdir(parents=True, exist_ok=True)
    victims = []
    for n, link in enumerate((f"{name}.part", f"{name}.json", f"{name}.json.part")):
        victim = outside / f"victim-{n}"
        victim.write_bytes(PLANTED)
        (directory / link).symlink_to(victim)
        victims.append(victim)
    return victims


def plant_outside(base: Path, project: Path) -> list[Path]:
    """Links at art/red.png's temporary names in `project`, to victims in a folder beside it under `base`."""
    outside = base / "outside"
    outside.mkdir()
    return plant_links(project / "art", "red.png", outside)


def assert_saved_not_through(saved: Path, victims: list[Path]) -> None:
    assert not saved.is_symlink() and saved.read_bytes().startswith(b"\x89PNG")
    assert [v.read_bytes() for v in victims] == [PLANTED] * len(victims)
