"""The tool registry: every toolset's list of definitions, and the tools a server registers, in the order clients
see them. Adding a tool is its own module and one line in its toolset's list; nothing else names it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from gemini_relay.config import Settings
from gemini_relay.core.vocabulary import Toolset
from gemini_relay.errors import ConfigError
from gemini_relay.tools.common.definition import AnyTool
from gemini_relay.tools.core import toolset as core
from gemini_relay.tools.jobs import toolset as jobs
from gemini_relay.tools.media import toolset as media
from gemini_relay.tools.review import toolset as review

Catalog = Mapping[Toolset | None, Sequence[AnyTool]]

# None: the default tools. Then the opt-in toolsets, in the order their tools are appended.
TOOLSETS: dict[Toolset | None, Sequence[AnyTool]] = {
    None: core.TOOLS,
    Toolset.JOBS: jobs.TOOLS,
    Toolset.REVIEW: review.TOOLS,
    Toolset.MEDIA: media.TOOLS,
}


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
    enabled = [tools for key, tools in catalog.items() if key is None or key in toolsets]
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
