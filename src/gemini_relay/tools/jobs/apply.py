"""gemini-apply: an isolated run's patch (`isolation: "worktree"`) onto the working tree; the handle of both worktree
tools (gemini-discard too) is the branch the run's answer named."""

from __future__ import annotations

from pydantic import Field

from gemini_relay.content.worktree import BRANCH_PATTERN, Worktree
from gemini_relay.content.worktree_reap import running_in
from gemini_relay.core.vocabulary import Effect, Toolset
from gemini_relay.errors import InputError
from gemini_relay.tools.common.context import Deps, Reply
from gemini_relay.tools.common.definition import Doc, ToolDef
from gemini_relay.tools.common.inputs import ToolInput
from gemini_relay.tools.common.isolation import worktrees
from gemini_relay.tools.common.progress import CallProgress


class WorktreeInput(ToolInput):
    branch: str = Field(pattern=BRANCH_PATTERN, description="The branch an isolated run's answer named.")


def idle_worktree(deps: Deps, branch: str, doing: str) -> Worktree:
    worktree = worktrees(deps).find(branch)
    job = running_in(deps.jobs.store if deps.jobs is not None else None, worktree)
    if job is not None:
        raise InputError(f"Job {job} is still running in {branch}: wait for it (gemini-wait) or cancel it first, "
                         f"then {doing}")  # fmt: skip
    return worktree


async def apply(deps: Deps, args: WorktreeInput, call: CallProgress) -> Reply:
    worktree = idle_worktree(deps, args.branch, "apply")
    changes = await worktrees(deps).apply_patch(worktree)
    files = [c.path for c in changes.files]
    text = (
        f"Applied the patch of `{worktree.branch}` to the working tree of {worktree.repo} (not staged, not "
        f"committed): {len(files)} file(s).\n```\n{changes.stat}\n```\n"
        f'gemini-discard {{"branch": "{worktree.branch}"}} removes the worktree and branch.'
    )
    return Reply(text)


DOC = Doc(
    "Apply an isolated run's patch (isolation 'worktree') to the project's working tree, unstaged: a dry run "
    "first (git apply --check); on conflict nothing is changed and the conflicting files are named.",
    prompt="Apply the changes of an isolated Gemini run.",
)
TOOL = ToolDef("gemini-apply", WorktreeInput, apply, Effect.WRITES_LOCAL, DOC, toolset=Toolset.JOBS)
