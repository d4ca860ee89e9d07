"""gemini-wait: block until a job ends or the wait passes, with progress meanwhile; then what gemini-status says."""

from __future__ import annotations

from pydantic import Field

from gemini_relay.core.vocabulary import Effect, Toolset
from gemini_relay.tools.common import output_schemas as out
from gemini_relay.tools.common.context import Deps, Reply
from gemini_relay.tools.common.definition import Doc, ToolDef
from gemini_relay.tools.common.progress import CallProgress
from gemini_relay.tools.jobs.collected import job_reply
from gemini_relay.tools.jobs.manager import job_manager
from gemini_relay.tools.jobs.status import StatusInput

# gemini-status is registered wherever gemini-wait is (the jobs and the media toolset).
_COLLECT = (
    "Collect a job with gemini-wait (blocks up to its cap with progress, call again while it is running) "
    "or gemini-status (answers at once); gemini-cancel with jobId stops it."
)


class WaitInput(StatusInput):
    wait: float | None = Field(
        None, gt=0, description="Seconds to block for the job to finish (default and cap: GEMINI_RELAY_WAIT_CAP, 90)."
    )


async def wait(deps: Deps, args: WaitInput, call: CallProgress) -> Reply:
    runner = job_manager(deps)
    limit = min(args.wait if args.wait is not None else deps.settings.wait_cap_seconds, deps.settings.wait_cap_seconds)
    runner.status(args.job_id)  # an unknown job is refused at once, not after the wait

    def on_tail(tail: str) -> None:
        call.output = tail

    await runner.wait(args.job_id, limit, on_tail=on_tail)
    return await job_reply(
        deps, args.job_id, lambda state: {"note": f"Still {state.value} after {limit:g}s; call gemini-wait again."}
    )


DOC = Doc(
    "Block until a job finishes or `wait` seconds pass (default and cap 90 s, below common client timeouts), "
    "sending progress meanwhile; returns the same fields as gemini-status.",
    prompt="Wait for a Gemini job to finish.",
    note=_COLLECT,
)
TOOL = ToolDef("gemini-wait", WaitInput, wait, Effect.LOCAL, DOC, toolset=Toolset.JOBS, output_schema=out.JOB_STATUS)
