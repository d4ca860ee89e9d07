"""`isolation: "worktree"` for the tools that let the agent edit (gemini-ask, gemini-run): the run works in a fresh
git worktree (content/worktree.py) and its answer carries the branch, the diff stat and the patch, which
gemini-apply applies and gemini-discard drops."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio

from gemini_relay.content.worktree import Changes, Worktree, Worktrees
from gemini_relay.errors import InputError
from gemini_relay.tools.common.context import Deps, Reply
from gemini_relay.tools.common.progress import CallProgress
from gemini_relay.tools.common.prompt_run import PromptRequest, PromptResult, paginate, run_prompt

PATCH_IN_ANSWER = 400_000  # bytes of patch an answer carries (≤ 50 chunks); the branch holds all of it
REFUSED = "isolation 'worktree' refused"


def worktrees(deps: Deps) -> Worktrees:
    return Worktrees(deps.settings.state_dir, deps.settings.env)


async def isolate(deps: Deps, cwd: Path, conflicts: Mapping[str, bool]) -> Worktree:
    """A new worktree for a run that would work in `cwd`. Raises InputError (WorktreeRefused) saying why not;
    `conflicts`: the options given that an isolated run cannot honour, by name."""
    entry = deps.registry.active_entry()
    if not entry.agent:
        raise InputError(
            f"{REFUSED}: the {entry.label} has no file tools (it answers in text and never edits files); "
            "isolated writes need an agent backend (agy or the Gemini CLI)"
        )
    given = [name for name, on in conflicts.items() if on]
    if given:
        raise InputError(f"{REFUSED} with {given[0]}: an isolated run answers with the diff of what the agent wrote")
    return await worktrees(deps).create(cwd)


async def run_isolated(
    deps: Deps, call: CallProgress, request: PromptRequest, worktree: Worktree
) -> tuple[PromptResult, Changes]:
    """The run in the worktree (allowed to edit unless `mode` says otherwise), then what it changed. A run that
    fails takes its worktree with it: the error has no diff to carry."""
    request = replace(request, cwd=worktree.cwd, mode=request.mode or "accept-edits")
    try:
        result = await run_prompt(deps, call, request)
        return result, await worktrees(deps).changes(worktree, limit=PATCH_IN_ANSWER)
    except BaseException:  # cleanup, re-raised: a failed or cancelled run leaves no worktree
        with anyio.CancelScope(shield=True):
            await worktrees(deps).discard(worktree)
        raise


def worktree_data(worktree: Worktree, changes: Changes) -> dict[str, Any]:
    return {
        "branch": worktree.branch,
        "path": str(worktree.path),
        "base": worktree.base,
        "files": [c.path for c in changes.files],
        "insertions": sum(c.insertions or 0 for c in changes.files),
        "deletions": sum(c.deletions or 0 for c in changes.files),
        "patch_cut": changes.cut,
    }


def worktree_text(worktree: Worktree, changes: Changes) -> str:
    """The section an isolated run's answer ends with: branch, stat, how to apply or drop it, the patch."""
    target = f'{{"branch": "{worktree.branch}"}}'
    drop = f"gemini-discard {target} removes the worktree and branch (or they go when the job expires)."
    head = f"🌿 Isolated run: branch `{worktree.branch}` from {worktree.base[:12]}; your project was not touched."
    if not changes.files:
        return f"{head}\nThe run changed no file. {drop}"
    lines = [
        head,
        "```",
        changes.stat,
        "```",
        f"Apply with gemini-apply {target} (jobs toolset; a dry run first, refused on conflicts) or "
        f"`git merge {worktree.branch}`. {drop}",
        "",
        "```diff",
        changes.patch.rstrip("\n"),
        "```",
    ]
    if changes.cut:
        lines.append(f"(The patch is cut at {PATCH_IN_ANSWER:,} bytes; the branch holds all of it.)")
    return "\n".join(lines)


async def with_worktree(deps: Deps, cwd: Path, reply: Reply) -> Reply:
    """A finished job's reply, with the worktree section when it ran isolated (`cwd`: the job's); a long section is
    paged like any long answer (gemini-fetch-chunk)."""
    worktree = worktrees(deps).containing(cwd)
    if worktree is None or reply.structured is None:
        return reply
    changes = await worktrees(deps).changes(worktree, limit=PATCH_IN_ANSWER)
    section = paginate(deps, worktree_text(worktree, changes))
    structured = {**reply.structured, "worktree": {**worktree_data(worktree, changes), **(section.meta or {})}}
    model_text = f"{reply.model_text}\n\n{section.text}" if reply.model_text else None
    return replace(reply, text=f"{reply.text}\n\n{section.text}", structured=structured, model_text=model_text)
