"""The tool registry: every toolset's list of definitions, and the tools a server registers, in the order clients
see them. Adding a tool is its own module and one line in its toolset's list; nothing else names it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from gemini_relay.core.vocabulary import Toolset
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
    *, test_tools: bool, toolsets: frozenset[Toolset] = frozenset(), catalog: Catalog = TOOLSETS
) -> list[AnyTool]:
    """The default tools, then each enabled toolset's in catalog order, then (test_tools) the test-only ones.

    A toolset's definition of a name already registered takes that tool's place (the jobs toolset's gemini-cancel
    gains a jobId); a definition listed by two enabled toolsets (gemini-status, gemini-wait) is registered once.
    """
    enabled = [tools for key, tools in catalog.items() if key is None or key in toolsets]
    chosen: dict[str, AnyTool] = {}
    for tools in enabled:
        chosen.update((tool.name, tool) for tool in tools if not tool.test_only)
    if test_tools:
        chosen.update((tool.name, tool) for tools in enabled for tool in tools if tool.test_only)
    return list(chosen.values())
