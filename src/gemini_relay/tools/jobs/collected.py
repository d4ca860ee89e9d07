"""A collected job's reply (gemini-status, gemini-wait, gemini-run with `wait`): the job's fields, and for a job that
ran isolated (`isolation: "worktree"`) and has ended, its branch, diff stat and patch."""

from __future__ import annotations

from typing import Any

from gemini_relay.core.vocabulary import RunState
from gemini_relay.tools.common.context import Deps, Reply
from gemini_relay.tools.common.isolation import with_worktree
from gemini_relay.tools.jobs.manager import job_manager
from gemini_relay.tools.jobs.views import status_reply


async def collected_reply(deps: Deps, data: dict[str, Any]) -> Reply:
    reply = status_reply(data)
    if not RunState(data["state"]).terminal:
        return reply
    return await with_worktree(deps, job_manager(deps).store.meta(data["job_id"]).spec.cwd, reply)
