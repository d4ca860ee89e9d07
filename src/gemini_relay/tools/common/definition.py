"""A tool's one declaration: everything the registry, tools/list, prompts/list and the server instructions say of it.

A tool module (tools/<toolset>/<name>.py, its name without `gemini-`) defines its input model and handler and
exports one `TOOL = ToolDef(name, input_model, handler, effect, doc)`; its toolset's list (tools/<toolset>/toolset.py)
names it; tools/registry.py registers the enabled toolsets in order, and server/surface.py derives the wire surface
from the definitions alone.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from gemini_relay.backends.entry import BackendEntry
from gemini_relay.core.vocabulary import Effect, Toolset
from gemini_relay.tools.common.context import Deps, Reply
from gemini_relay.tools.common.inputs import ToolInput
from gemini_relay.tools.common.progress import CallProgress

M = TypeVar("M", bound=ToolInput)
# A text that says something of the active backend: written for it (the instructions name no other backend).
Wording = str | Callable[[BackendEntry], str]


def worded(text: Wording, upstream: BackendEntry) -> str:
    return text if isinstance(text, str) else text(upstream)


@dataclass(frozen=True)
class Doc:
    """What the tool says of itself: in tools/list, prompts/list and the server instructions."""

    description: Wording  # tools/list's; what it says of the backend is true of the active one
    prompt: str = ""  # the description of the tool's MCP prompt
    when: When | None = None  # its line in the server instructions, if any
    note: str = ""  # a paragraph the instructions end with while the tool is registered


@dataclass(frozen=True)
class When:
    """The tool's line under "Which tool when:" in the server instructions; lines stand in `order`, lowest first."""

    order: int
    text: Wording


@dataclass(frozen=True)
class ToolDef(Generic[M]):
    name: str
    input_model: type[M]  # validates the arguments; its wire schema is the inputSchema clients see
    handler: Callable[[Deps, M, CallProgress], Awaitable[Reply]]
    effect: Effect  # what it does to the world; its MCP annotations (honest side-effect hints) follow from it
    doc: Doc
    toolset: Toolset | None = None  # the toolset that brings it (GEMINI_RELAY_TOOLSETS); None: a default tool
    output_schema: dict[str, Any] | None = None  # declared: every successful reply carries matching structured data
    answers_at_once: bool = False  # never worth a task: the call returns before any run ends (gemini-run)
    test_only: bool = False  # registered only with GEMINI_MCP_TEST_TOOLS, after every toolset

    def description_for(self, upstream: BackendEntry) -> str:
        return worded(self.doc.description, upstream)

    @property
    def task_support(self) -> bool:
        """A call that runs a model turn may be answered as an MCP task."""
        return self.effect.hints.open_world and not self.answers_at_once


AnyTool = ToolDef[Any]
