"""gemini-discard: remove an isolated run's worktree and its branch."""

from __future__ import annotations

from gemini_relay.core.vocabulary import Effect, Toolset
from gemini_relay.tools.common.context import Deps, Reply
from gemini_relay.tools.common.definition import Doc, ToolDef
from gemini_relay.tools.common.isolation import worktrees
from gemini_relay.tools.common.progress import CallProgress
from gemini_relay.tools.jobs.apply import WorktreeInput, idle_worktree


async def discard(deps: Deps, args: WorktreeInput, call: CallProgress) -> Reply:
    worktree = idle_worktree(deps, args.branch, "discard")
    await worktrees(deps).discard(worktree)
    return Reply(f"Removed the worktree and branch `{worktree.branch}`; the project was not touched.")


DOC = Doc(
    "Remove an isolated run's worktree and branch (isolation 'worktree'); the project is not touched.",
    prompt="Drop the worktree of an isolated Gemini run.",
)
TOOL = ToolDef("gemini-discard", WorktreeInput, discard, Effect.WRITES_LOCAL, DOC, toolset=Toolset.JOBS)
