"""The MCP surface clients see: for every toolset combination, with and without the test-only tools, tools/list,
prompts/list and the initialize instructions are the same to the byte as tests/data/surface.json recorded (a
deliberate change rewrites the snapshot: `.venv/bin/python -m tests.inmemory.surface`), and are what the tool
definitions declare; a new tool is its own module plus one line in its toolset's list."""

from __future__ import annotations

import json
from typing import Any

import pytest

from gemini_relay.backends.backend_registry import entries
from gemini_relay.config import DEFAULT_TIMEOUT_MINUTES
from gemini_relay.core.vocabulary import BackendName, Toolset
from gemini_relay.tools.common.controls import schema_with_limits
from gemini_relay.tools.common.definition import worded
from gemini_relay.tools.common.inputs import wire_schema
from gemini_relay.tools.registry import TOOLSETS, registry
from gemini_relay.tools.review import toolset as review_toolset
from tests.harness import REPO
from tests.inmemory import echo_tool
from tests.inmemory.conftest import InMemory, text_of
from tests.inmemory.surface import SNAPSHOT, combinations, combo_key, surface_of, unfold

pytestmark = pytest.mark.anyio
GEMINI = next(e for e in entries() if e.name == BackendName("gemini"))


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


# --- derived from the declarations ------------------------------------------------------------------------------


@pytest.mark.parametrize(("toolsets", "test_tools"), combinations(), ids=[combo_key(*c) for c in combinations()])
async def test_what_a_client_sees_is_what_the_definitions_declare(
    relay: InMemory, toolsets: tuple[Toolset, ...], test_tools: bool
) -> None:
    declared = registry(test_tools=test_tools, toolsets=frozenset(toolsets))
    served = await surface_of(relay, toolsets, test_tools)
    assert [t["name"] for t in served["tools"]] == [d.name for d in declared]
    for entry, tool in zip(served["tools"], declared, strict=True):
        assert entry["description"] == tool.description_for(GEMINI)  # the in-memory world's backend
        # timeoutSeconds shows this server's GEMINI_MCP_TIMEOUT (the default here) as its maximum.
        assert entry["inputSchema"] == schema_with_limits(wire_schema(tool.input_model), DEFAULT_TIMEOUT_MINUTES * 60)
        assert entry.get("outputSchema") == tool.output_schema
        assert entry["annotations"] == {
            "readOnlyHint": tool.effect.hints.read_only,
            "destructiveHint": tool.effect.hints.destructive,
            "idempotentHint": tool.effect.hints.idempotent,
            "openWorldHint": tool.effect.hints.open_world,
        }
        assert ("execution" in entry) is tool.task_support  # this server has a state dir: it answers tasks
    assert [(p["name"], p["description"]) for p in served["prompts"]] == [(d.name, d.doc.prompt) for d in declared]
    guided = sorted(
        (d for d in declared if d.doc.when is not None), key=lambda d: d.doc.when.order if d.doc.when else 0
    )
    lines = served["instructions"].splitlines()
    whens = [f"- {d.name}: {worded(d.doc.when.text, GEMINI)}" for d in guided if d.doc.when]
    assert [line for line in lines if line.startswith("- ")] == whens
    assert [line for line in lines if line in {d.doc.note for d in declared}] == [
        d.doc.note for d in declared if d.doc.note
    ]


async def test_a_new_tool_is_its_own_module_and_one_line_in_its_toolsets_list(
    relay: InMemory, snapshot: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The one line: review/toolset.py's TOOLS gains `echo_tool.TOOL`.
    monkeypatch.setitem(TOOLSETS, Toolset.REVIEW, (*review_toolset.TOOLS, echo_tool.TOOL))
    served = await surface_of(relay, (Toolset.REVIEW,), False)
    async with relay.client(GEMINI_RELAY_TOOLSETS="review") as client:
        said = await client.call_tool("gemini-echo", {"text": "hi", "shout": True})
        prompt = await client.get_prompt("gemini-echo", {"text": "hi", "shout": "true"})
    without = await surface_of(relay, (), False)

    names = [t["name"] for t in served["tools"]]
    assert names[-2:] == ["gemini-consensus", "gemini-echo"]  # at the end of its toolset, in its list's order
    echo = served["tools"][-1]
    assert echo["description"] == "Say the text back, in-process."
    assert echo["inputSchema"]["properties"]["shout"] == {
        "default": False,
        "description": "Say it in capitals.",
        "type": "boolean",
    }
    assert echo["annotations"]["readOnlyHint"] is True and "execution" not in echo  # in-process: never a task
    assert served["prompts"][-1]["name"] == "gemini-echo"
    assert served["prompts"][-1]["arguments"] == [
        {"name": "text", "description": "What to say back.", "required": True},
        {"name": "shout", "description": "Say it in capitals.", "required": False},
    ]
    guide = [line for line in served["instructions"].splitlines() if line.startswith("- ")]
    assert guide[guide.index("- gemini-echo: the text said back") - 1].startswith("- gemini-search: ")  # order 65
    assert guide[guide.index("- gemini-echo: the text said back") + 1].startswith("- gemini-structured: ")
    assert said.content[0].text == "HI"  # type: ignore[union-attr]
    assert prompt.messages[0].content.text == "Use the gemini-echo tool: (text: hi) [shout]"  # type: ignore[union-attr]

    recorded = unfold(snapshot, combo_key((Toolset.REVIEW,), False))
    assert served["tools"][:-1] == recorded["tools"] and served["prompts"][:-1] == recorded["prompts"]
    assert served["instructions"].replace("- gemini-echo: the text said back\n", "") == recorded["instructions"]
    assert without == unfold(snapshot, combo_key((), False))  # its toolset off: not a trace of it


# --- seed 000, and where the relay departs from it ----------------------------------------------------------------


async def test_the_default_surface_departs_from_seed_000_only_as_docs_seeds_says(relay: InMemory) -> None:
    async with relay.client() as client:
        caps = client.server_capabilities
        tools = (await client.list_tools()).tools
        resources = await client.list_resources()
        refused = await client.call_tool("gemini-ping", {"promt": "typo"})
    # 000 declares tools, prompts and logging; the relay adds resources, answered empty (docs/seeds.md, row 2).
    assert caps.tools is not None and caps.prompts is not None and caps.logging is not None
    assert caps.resources is not None and resources.resources == []
    # 000's schemas drop unknown arguments; the relay's forbid them and say so (docs/seeds.md, row 1).
    assert all(t.input_schema.get("additionalProperties") is False for t in tools)
    assert refused.is_error and "promt: unknown argument" in text_of(refused)
    table = (REPO / "docs" / "seeds.md").read_text(encoding="utf-8")
    assert "`additionalProperties: false`" in table and "also `resources`" in table and "<array of N>" in table


async def test_gemini_cancel_is_destructive_and_idempotent_as_agy_mcps_cancel_is_annotated(relay: InMemory) -> None:
    for toolsets in ((), (Toolset.JOBS,)):
        served = await surface_of(relay, toolsets, False)
        (cancel,) = [t for t in served["tools"] if t["name"] == "gemini-cancel"]
        assert cancel["annotations"]["destructiveHint"] is True
        assert cancel["annotations"]["idempotentHint"] is True
