"""The MCP surface clients see stays what tests/data/surface.json recorded: for every toolset combination, with and
without the test-only tools, tools/list, prompts/list and the initialize instructions are the same to the byte
(a deliberate change rewrites the snapshot: `.venv/bin/python -m tests.inmemory.surface`)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from gemini_relay.core.vocabulary import Toolset
from tests.inmemory.conftest import InMemory
from tests.inmemory.surface import SNAPSHOT, combinations, combo_key, surface_of, unfold

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def snapshot() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(SNAPSHOT.read_text(encoding="utf-8"))
    return data


def test_the_snapshot_covers_every_toolset_combination(snapshot: dict[str, Any]) -> None:
    assert sorted(snapshot["combinations"]) == sorted(combo_key(*c) for c in combinations())
    assert len(snapshot["combinations"]) == 2 ** (len(Toolset) + 1)


@pytest.mark.parametrize(("toolsets", "test_tools"), combinations(), ids=[combo_key(*c) for c in combinations()])
async def test_tools_prompts_and_instructions_are_served_as_recorded(
    relay: InMemory, snapshot: dict[str, Any], toolsets: tuple[Toolset, ...], test_tools: bool
) -> None:
    served = await surface_of(relay, toolsets, test_tools)
    recorded = unfold(snapshot, combo_key(toolsets, test_tools))
    assert served["instructions"] == recorded["instructions"]
    assert [t["name"] for t in served["tools"]] == [t["name"] for t in recorded["tools"]]
    for got, want in zip(served["tools"], recorded["tools"], strict=True):
        assert got == want, got["name"]
    assert served["prompts"] == recorded["prompts"]
    assert json.dumps(served, sort_keys=False) == json.dumps(recorded, sort_keys=False)  # key order too
