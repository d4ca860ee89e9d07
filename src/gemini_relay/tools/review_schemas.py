"""Input models of the review toolset (gemini-assess, gemini-review, gemini-search, gemini-structured)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from gemini_relay.content.review import HARD_TIMEOUT_CAP
from gemini_relay.content.structured import MAX_SCHEMA_BYTES
from gemini_relay.tools.common.inputs import PathText, ToolInput

Depth = Literal["scan", "focused", "deep"]
MAX_WORDS = 100_000
MAX_FILES = 20
_BASE = (
    "Review base...HEAD instead of uncommitted work: a branch, tag or commit such as 'main' or 'origin/develop' "
    "(letters, digits, '_', '.', '/', '-')."
)
_UNCOMMITTED = "Diff staged and unstaged changes against HEAD (the default). Ignored when base is given."
_MAX_WORDS = "A soft length limit in words, given to the model as an instruction."


_WORKDIR = (
    "The directory whose git repository is reviewed (realpath-resolved, relative to the project root); refused "
    "outside GEMINI_RELAY_ALLOWED_ROOTS when that is set. Default: the project root."
)


class AssessInput(ToolInput):
    uncommitted: bool = Field(True, description=_UNCOMMITTED)
    base: str | None = Field(None, description=_BASE)
    working_directory: str | None = Field(None, min_length=1, max_length=4096, description=_WORKDIR)


class ReviewInput(ToolInput):
    uncommitted: bool = Field(True, description=_UNCOMMITTED)
    base: str | None = Field(None, description=_BASE)
    working_directory: str | None = Field(None, min_length=1, max_length=4096, description=_WORKDIR)
    focus: str | None = Field(None, description="What to pay special attention to, e.g. 'security' or 'error paths'.")
    depth: Depth | None = Field(
        None,
        description="'scan': the diff only; 'focused': the diff plus the changed files; 'deep' (default): agentic, "
        "follows imports and tests and reads AGENTS.md/GEMINI.md. All read-only. Run gemini-assess to choose.",
    )
    quick: bool | None = Field(
        None, description="Deprecated: true means depth 'scan', false means 'deep'. depth wins when both are set."
    )
    model: str | None = Field(None, description="Model id or alias ('flash', 'pro'); unset: the backend default.")
    timeout: float | None = Field(
        None,
        gt=0,
        description=f"Seconds the review may take. Default: scaled by depth and changed files (scan 180; focused "
        f"120 + 15/file up to 300; deep 240 + 45/file). Capped at {int(HARD_TIMEOUT_CAP)}.",
    )
    max_response_length: int | None = Field(None, ge=1, le=MAX_WORDS, description=_MAX_WORDS)


class SearchInput(ToolInput):
    query: str = Field(min_length=1, description="The question to research on the web.")
    model: str | None = Field(None, description="Model id or alias ('flash', 'pro'); unset: the backend default.")
    max_response_length: int | None = Field(None, ge=1, le=MAX_WORDS, description=_MAX_WORDS)


class StructuredInput(ToolInput):
    prompt: str = Field(min_length=1, description="What to produce. @path references work as in gemini-ask.")
    json_schema: str | dict[str, Any] = Field(
        alias="schema",
        description=f"The JSON Schema the answer must satisfy: an object, or its JSON text (at most "
        f"{MAX_SCHEMA_BYTES // 1024} KB). Checked before anything runs.",
    )
    files: list[PathText] | None = Field(
        None,
        max_length=MAX_FILES,
        description=f"Up to {MAX_FILES} text files (paths inside the project root) sent along with the prompt.",
    )
    model: str | None = Field(None, description="Model id or alias ('flash', 'pro'); unset: the backend default.")
