"""The registry is derived from the tool definitions: each tool module exports one definition, named after the tool,
in its toolset's folder and listed in its toolset's list; the registry orders and replaces by the lists alone."""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType

import pytest

from gemini_relay.core.vocabulary import Toolset
from gemini_relay.tools.common.definition import AnyTool, Doc, ToolDef
from gemini_relay.tools.core import ping
from gemini_relay.tools.core import toolset as core
from gemini_relay.tools.jobs import status, wait
from gemini_relay.tools.registry import TOOLSETS, registry

FOLDERS = {"core": None, **{t.value: t for t in Toolset}}


def _modules() -> list[ModuleType]:
    found = []
    for folder in FOLDERS:
        package = importlib.import_module(f"gemini_relay.tools.{folder}")
        found += [
            importlib.import_module(f"{package.__name__}.{m.name}") for m in pkgutil.iter_modules(package.__path__)
        ]
    return found


def _definitions(module: ModuleType) -> list[tuple[str, AnyTool]]:
    return [(name, value) for name, value in vars(module).items() if isinstance(value, ToolDef)]


def test_every_toolset_has_a_folder_and_a_list() -> None:
    assert set(TOOLSETS) == set(FOLDERS.values())


@pytest.mark.parametrize("module", _modules(), ids=lambda m: m.__name__.removeprefix("gemini_relay.tools."))
def test_a_tool_module_exports_its_one_definition_named_after_the_tool_and_its_toolset_lists_it(
    module: ModuleType,
) -> None:
    defined = [(name, tool) for name, tool in _definitions(module) if tool.handler.__module__ == module.__name__]
    if not defined:  # shared machinery of the folder (or its list): no definition of its own
        return
    assert [name for name, _ in defined] == ["TOOL"], f"{module.__name__} exports more than its one definition"
    tool = defined[0][1]
    folder, stem = module.__name__.split(".")[-2:]
    assert stem == tool.name.removeprefix("gemini-").replace("-", "_")
    assert FOLDERS[folder] is tool.toolset, f"{tool.name} lives in {folder}/ but declares {tool.toolset}"
    assert tool in TOOLSETS[tool.toolset], f"{tool.name} is missing from its toolset's list"


@pytest.mark.parametrize("key", list(TOOLSETS), ids=lambda k: k.value if k else "core")
def test_a_toolset_lists_its_own_tools_and_borrows_others_only_from_their_lists(key: Toolset | None) -> None:
    for tool in TOOLSETS[key]:
        if tool.toolset is not key:
            assert tool in TOOLSETS[tool.toolset], f"{tool.name} is borrowed from a list that lacks it"


def test_every_definition_has_a_prompt_and_names_are_unique_but_for_a_toolset_taking_a_tools_place() -> None:
    tools = {id(t): t for listed in TOOLSETS.values() for t in listed}.values()
    assert all(t.doc.prompt for t in tools)
    by_name: dict[str, list[AnyTool]] = {}
    for tool in tools:
        by_name.setdefault(tool.name, []).append(tool)
    twice = {name: [t.toolset for t in found] for name, found in by_name.items() if len(found) > 1}
    assert twice == {"gemini-cancel": [None, Toolset.JOBS]}


def test_the_registry_appends_toolsets_in_order_replaces_in_place_and_puts_test_only_tools_last() -> None:
    other_ping = ToolDef(**{**vars(ping.TOOL), "toolset": Toolset.REVIEW, "doc": Doc("another ping")})
    catalog = {
        None: core.TOOLS,
        Toolset.JOBS: (status.TOOL, wait.TOOL),
        Toolset.REVIEW: (other_ping,),
        Toolset.MEDIA: (wait.TOOL, status.TOOL),
    }
    default = registry(test_tools=False, catalog=catalog)
    assert [t.name for t in default] == [t.name for t in core.TOOLS if not t.test_only]
    both = registry(test_tools=True, toolsets=frozenset(Toolset), catalog=catalog)
    names = [t.name for t in both]
    assert names[-3:] == ["gemini-status", "gemini-wait", "gemini-timeout-test"]  # jobs' order; media adds nothing
    assert names.index("gemini-ping") == [t.name for t in default].index("gemini-ping")  # replaced in place
    assert both[names.index("gemini-ping")].doc.description == "another ping"
    media_only = registry(test_tools=False, toolsets=frozenset({Toolset.MEDIA}), catalog=catalog)
    assert [t.name for t in media_only][-2:] == ["gemini-wait", "gemini-status"]
