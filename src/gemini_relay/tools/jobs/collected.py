"""A collected job's reply (gemini-status, gemini-wait, gemini-run with `wait`): the job's fields, and for a job that
ran isolated (`isolation: "worktree"`) and has ended, its branch, diff stat and patch."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gemini_relay.core.vocabulary import RunState
from gemini_relay.tools.common.context import Deps, Reply
from gemini_relay.tools.common.isolation import with_worktree
from gemini_relay.tools.jobs.manager import job_manager
from gemini_relay.tools.jobs.quota import with_quota
from gemini_relay.tools.jobs.views import status_reply


async def collected_reply(deps: Deps, data: dict[str, Any]) -> Reply:
    """The job's fields with its backend's last quota reading; ended and isolated, its worktree's changes too."""
    reply = status_reply(with_quota(deps, data))
    if not RunState(data["state"]).terminal:
        return reply
    return await with_worktree(deps, job_manager(deps).store.meta(data["job_id"]).spec.cwd, reply)


async def job_reply(deps: Deps, job_id: str, unfinished: Callable[[RunState], dict[str, str]]) -> Reply:
    """The job collected now (gemini-status, gemini-wait); while it runs, `unfinished` adds what to call next."""
    result = await job_manager(deps).collect(job_id)
    data = result.to_json()
    if not result.state.terminal:
        data.update(unfinished(result.state))
    return await collected_reply(deps, data)
