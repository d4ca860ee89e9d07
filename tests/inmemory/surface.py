"""The relay's MCP surface as a client sees it, for every toolset combination: tools/list, prompts/list and the
initialize instructions. tests/data/surface.json holds it as gemini-relay serves it; test_surface.py compares.

A deliberate change of the surface (a new tool, a reworded description) rewrites the snapshot with
`.venv/bin/python -m tests.inmemory.surface`; the diff of tests/data/surface.json is then the review of what
clients will see change.
"""

from __future__ import annotations

import itertools
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio

from gemini_relay.core.vocabulary import Toolset
from tests.inmemory.conftest import InMemory, in_memory

SNAPSHOT = Path(__file__).resolve().parents[1] / "data" / "surface.json"


def combinations() -> list[tuple[tuple[Toolset, ...], bool]]:
    """Every subset of the toolsets (in Toolset order), each without and with the test-only tools."""
    subsets = [c for n in range(len(Toolset) + 1) for c in itertools.combinations(Toolset, n)]
    return [(subset, test_tools) for subset in subsets for test_tools in (False, True)]


def combo_key(toolsets: tuple[Toolset, ...], test_tools: bool) -> str:
    return f"toolsets={','.join(t.value for t in toolsets)} test_tools={int(test_tools)}"


def _env(toolsets: tuple[Toolset, ...], test_tools: bool) -> dict[str, str]:
    return {"GEMINI_RELAY_TOOLSETS": ",".join(t.value for t in toolsets), "GEMINI_MCP_TEST_TOOLS": "1" * test_tools}


async def surface_of(relay: InMemory, toolsets: tuple[Toolset, ...], test_tools: bool) -> dict[str, Any]:
    """{"instructions": str, "tools": [tool as JSON], "prompts": [prompt as JSON]} of one combination."""
    async with relay.client(**_env(toolsets, test_tools)) as client:
        tools = (await client.list_tools()).tools
        prompts = (await client.list_prompts()).prompts
        instructions = client.instructions
    return {
        "instructions": instructions,
        "tools": [t.model_dump(by_alias=True, mode="json", exclude_none=True) for t in tools],
        "prompts": [p.model_dump(by_alias=True, mode="json", exclude_none=True) for p in prompts],
    }


def _keyed(entries: dict[str, Any], item: dict[str, Any]) -> str:
    """The key of `item` in `entries`: its name, or `name~N` for the N-th different entry of that name."""
    name = str(item["name"])
    for n in itertools.count(1):
        key = name if n == 1 else f"{name}~{n}"
        if key not in entries:
            entries[key] = item
        if entries[key] == item:
            return key
    raise AssertionError("unreachable")


def fold(surfaces: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The snapshot: every distinct tool and prompt once, and per combination the keys in the order served."""
    tools: dict[str, Any] = {}
    prompts: dict[str, Any] = {}
    folded = {
        key: {
            "instructions": surface["instructions"],
            "tools": [_keyed(tools, t) for t in surface["tools"]],
            "prompts": [_keyed(prompts, p) for p in surface["prompts"]],
        }
        for key, surface in surfaces.items()
    }
    return {"tools": tools, "prompts": prompts, "combinations": folded}


def unfold(snapshot: dict[str, Any], key: str) -> dict[str, Any]:
    combo = snapshot["combinations"][key]
    return {
        "instructions": combo["instructions"],
        "tools": [snapshot["tools"][k] for k in combo["tools"]],
        "prompts": [snapshot["prompts"][k] for k in combo["prompts"]],
    }


async def capture(relay: InMemory) -> dict[str, Any]:
    surfaces = {combo_key(*c): await surface_of(relay, *c) for c in combinations()}
    return fold(surfaces)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        snapshot = anyio.run(capture, in_memory(Path(tmp)))
    SNAPSHOT.write_text(json.dumps(snapshot, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    sys.stdout.write(f"wrote {SNAPSHOT} ({len(snapshot['combinations'])} combinations)\n")


if __name__ == "__main__":
    main()
