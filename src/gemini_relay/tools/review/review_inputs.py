"""What the review toolset's input models share: the diff a call is about, and the soft length limit of an answer."""

from __future__ import annotations

from pydantic import Field

from gemini_relay.tools.common.inputs import ToolInput

MAX_WORDS = 100_000
LENGTH_LIMIT = "A soft length limit in words, given to the model as an instruction."
_BASE = (
    "Review base...HEAD instead of uncommitted work: a branch, tag or commit such as 'main' or 'origin/develop' "
    "(letters, digits, '_', '.', '/', '-')."
)
_UNCOMMITTED = "Diff staged and unstaged changes against HEAD (the default). Ignored when base is given."
_WORKDIR = (
    "The directory whose git repository is reviewed (realpath-resolved, relative to the project root); refused "
    "outside GEMINI_RELAY_ALLOWED_ROOTS when that is set. Default: the project root."
)


WORKING_DIRECTORY = (
    "The directory the run works in (realpath-resolved, relative to the project root); @ references and files are "
    "read from it and refused outside it; refused outside GEMINI_RELAY_ALLOWED_ROOTS when that is set. Default: the "
    "project root."
)


class DiffInput(ToolInput):
    """Which diff: the uncommitted work (the default) or base...HEAD, of the repository at workingDirectory."""

    uncommitted: bool = Field(True, description=_UNCOMMITTED)
    base: str | None = Field(None, description=_BASE)
    working_directory: str | None = Field(None, min_length=1, max_length=4096, description=_WORKDIR)
