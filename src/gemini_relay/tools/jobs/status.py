"""gemini-status: a job's state, and once it has ended its result; never blocks."""

from __future__ import annotations

from pydantic import Field

from gemini_relay.core.vocabulary import Effect, Toolset
from gemini_relay.tools.common import output_schemas as out
from gemini_relay.tools.common.context import Deps, Reply
from gemini_relay.tools.common.definition import Doc, ToolDef
from gemini_relay.tools.common.inputs import ToolInput
from gemini_relay.tools.common.progress import CallProgress
from gemini_relay.tools.jobs.collected import job_reply


class StatusInput(ToolInput):
    job_id: str = Field(min_length=1, max_length=64, description="The jobId gemini-run returned.")


async def status(deps: Deps, args: StatusInput, call: CallProgress) -> Reply:
    hint = f'gemini-wait {{"jobId": "{args.job_id}"}} blocks until it ends.'
    return await job_reply(deps, args.job_id, lambda state: {"next": f"Still {state.value}: {hint}"})


DOC = Doc(
    "A job's state (queued, starting, running, done, failed, cancelled), elapsed time, and when finished its "
    "result, error, failure_reason, partial flag, recovery note, retryable, error_id, conversationId, model, "
    "usage and turns. Never blocks.",
    prompt="Check a Gemini job.",
)
TOOL = ToolDef(
    "gemini-status", StatusInput, status, Effect.LOCAL, DOC, toolset=Toolset.JOBS, output_schema=out.JOB_STATUS
)
