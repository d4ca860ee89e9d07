"""gemini-jobs: the recent jobs of every server sharing the state dir, newest first."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Literal

from pydantic import Field

from gemini_relay.core.vocabulary import Effect, Toolset
from gemini_relay.tools.common import output_schemas as out
from gemini_relay.tools.common.context import Deps, Reply
from gemini_relay.tools.common.definition import Doc, ToolDef
from gemini_relay.tools.common.inputs import ToolInput
from gemini_relay.tools.common.progress import CallProgress
from gemini_relay.tools.jobs.manager import job_manager
from gemini_relay.tools.jobs.views import list_reply

PREVIEW_CHARS = 200


class JobsInput(ToolInput):
    limit: int = Field(20, ge=1, le=200, description="How many recent jobs to list.")
    state: Literal["queued", "starting", "running", "done", "failed", "cancelled"] | None = Field(
        None, description="Only jobs in this state."
    )


async def jobs(deps: Deps, args: JobsInput, call: CallProgress) -> Reply:
    listed = []
    for row in job_manager(deps).jobs(args.state, args.limit):
        whole = ("result", "usage", "notices", "structured_output", "receipt")  # a row is the summary; status has them
        item = {k: v for k, v in row.to_json().items() if k not in whole}
        item["created"] = datetime.fromtimestamp(row.created_at, UTC).isoformat(timespec="seconds")
        if row.text:
            item["preview"] = row.text[:PREVIEW_CHARS]
        listed.append(item)
    data = {"jobs": listed, "count": len(listed)}
    return list_reply(data, args.state)


DOC = Doc(
    "Recent jobs of every server sharing the state dir, newest first, including those whose client went away.",
    prompt="List recent Gemini jobs.",
)
TOOL = ToolDef("gemini-jobs", JobsInput, jobs, Effect.LOCAL, DOC, toolset=Toolset.JOBS, output_schema=out.JOB_LIST)
