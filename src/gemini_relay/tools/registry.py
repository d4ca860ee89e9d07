"""The tool registry: every toolset's list of definitions, and the tools a server registers, in the order clients
see them. Adding a tool is its own module and one line in its toolset's list; nothing else names it."""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping, MutableMapping, Sequence

from gemini_relay.config import Settings
from gemini_relay.core.vocabulary import Toolset
from gemini_relay.errors import ConfigError
from gemini_relay.tools.common.definition import AnyTool
from gemini_relay.tools.core import toolset as core

Catalog = Mapping[Toolset | None, Sequence[AnyTool]]


class LazyCatalog(MutableMapping[Toolset | None, Sequence[AnyTool]]):
    """The toolsets by key; one given as a module name is imported (its `TOOLS`) the first time it is looked up: a
    server loads the tool modules of the toolsets it serves, not the others' (their models and texts cost CPU at
    every start). Iterating names the keys without importing; a key set here (tests) takes its toolset's place."""

    def __init__(self, toolsets: Mapping[Toolset | None, Sequence[AnyTool] | str]) -> None:
        self._modules = {key: tools if isinstance(tools, str) else "" for key, tools in toolsets.items()}
        self._loaded = {key: tools for key, tools in toolsets.items() if not isinstance(tools, str)}

    def __getitem__(self, key: Toolset | None) -> Sequence[AnyTool]:
        if key not in self._loaded:
            tools: Sequence[AnyTool] = importlib.import_module(self._modules[key]).TOOLS
            self._loaded[key] = tools
        return self._loaded[key]

    def __setitem__(self, key: Toolset | None, tools: Sequence[AnyTool]) -> None:
        self._modules.setdefault(key, "")
        self._loaded[key] = tools

    def __delitem__(self, key: Toolset | None) -> None:
        del self._modules[key]
        self._loaded.pop(key, None)

    def __iter__(self) -> Iterator[Toolset | None]:
        return iter(self._modules)

    def __len__(self) -> int:
        return len(self._modules)


# None: the default tools. Then the opt-in toolsets, in the order their tools are appended.
TOOLSETS = LazyCatalog(
    {
        None: core.TOOLS,
        Toolset.JOBS: "gemini_relay.tools.jobs.toolset",
        Toolset.REVIEW: "gemini_relay.tools.review.toolset",
        Toolset.MEDIA: "gemini_relay.tools.media.toolset",
    }
)


def registry(
    *,
    test_tools: bool,
    toolsets: frozenset[Toolset] = frozenset(),
    allow: frozenset[str] | None = None,
    catalog: Catalog = TOOLSETS,
) -> list[AnyTool]:
    """The default tools, then each enabled toolset's in catalog order, then (test_tools) the test-only ones; with
    `allow` (GEMINI_RELAY_TOOLS), only those of them it names, in the same order.

    A toolset's definition of a name already registered takes that tool's place (the jobs toolset's gemini-cancel
    gains a jobId); a definition listed by two enabled toolsets (gemini-status, gemini-wait) is registered once.
    """
    enabled = [catalog[key] for key in catalog if key is None or key in toolsets]  # the others stay unimported
    chosen: dict[str, AnyTool] = {}
    for tools in enabled:
        chosen.update((tool.name, tool) for tool in tools if not tool.test_only)
    if test_tools:
        chosen.update((tool.name, tool) for tools in enabled for tool in tools if tool.test_only)
    return [tool for name, tool in chosen.items() if allow is None or name in allow]


def check_allowlist(settings: Settings, catalog: Catalog = TOOLSETS) -> None:
    """A GEMINI_RELAY_TOOLS name that is no tool the enabled toolsets serve is a configuration error, naming the
    toolset to enable when it belongs to one that is off.

    Raises:
        ConfigError: naming the variable, so a server that starts anyway leaves the allowlist out and says why.
    """
    if settings.tools is None:
        return
    served = {tool.name for tool in registry(test_tools=settings.test_tools, toolsets=settings.toolsets)}
    missing = sorted(settings.tools - served)
    if not missing:
        return
    owners: dict[str, list[str]] = {}
    for key, tools in catalog.items():
        for tool in tools:
            if key is not None and not tool.test_only:
                owners.setdefault(tool.name, []).append(key.value)
    unknown = [name for name in missing if name not in owners]
    parts = [f"unknown tool(s) {', '.join(unknown)}"] if unknown else []
    parts += [
        f"{name}, which needs the {' or '.join(owners[name])} toolset in GEMINI_RELAY_TOOLSETS"
        for name in missing
        if name in owners
    ]
    message = f"GEMINI_RELAY_TOOLS names {'; '.join(parts)}; served now: {', '.join(sorted(served))}"
    raise ConfigError(message, variable="GEMINI_RELAY_TOOLS")
