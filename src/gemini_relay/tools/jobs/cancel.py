"""gemini-cancel with the jobs toolset: stop one job by its jobId, or (without) every run in flight."""

from __future__ import annotations

from pydantic import Field

from gemini_relay.core.vocabulary import Effect, RunState, Toolset
from gemini_relay.log import logger
from gemini_relay.tools.common.context import Deps, Reply
from gemini_relay.tools.common.definition import Doc, ToolDef
from gemini_relay.tools.common.inputs import ToolInput
from gemini_relay.tools.common.progress import CallProgress
from gemini_relay.tools.jobs.manager import job_manager


class CancelJobInput(ToolInput):
    job_id: str | None = Field(
        None, min_length=1, max_length=64, description="Cancel only this job; omit to cancel every run in flight."
    )


async def cancel(deps: Deps, args: CancelJobInput, call: CallProgress) -> Reply:
    if args.job_id is None:
        count = deps.runs.cancel_all("was cancelled by gemini-cancel")
        return Reply("Nothing was running." if count == 0 else f"Cancelled {count} run(s).")
    runner = job_manager(deps)
    before = runner.status(args.job_id)
    if before.state.terminal:
        return Reply(f"Job {args.job_id} had already ended ({before.state.value}).")
    try:  # hook-wait owes no wake for a job the caller stopped (only if it then ends cancelled)
        runner.store.mark_dismissed(args.job_id)
    except OSError as exc:
        logger.warning("Could not mark job %s dismissed (%s)", args.job_id, exc.strerror or exc)
    after = await runner.cancel(args.job_id)
    if after.state is RunState.QUEUED:
        return Reply(f"Job {args.job_id} will not start: it was cancelled while queued.")
    # The job's own age, not how long the cancel took: a 150 s job said "cancelled after 0.0s".
    return Reply(f"Cancelled job {args.job_id} ({after.state.value} after {after.elapsed:.1f}s).")


DOC = Doc(
    "Stop Gemini runs: with jobId, that job (SIGTERM to its process group, a grace, then SIGKILL); without, every "
    "run in flight, each of which fails with 'was cancelled by gemini-cancel'.",
    prompt="Cancel running Gemini calls or one job.",
)
TOOL = ToolDef("gemini-cancel", CancelJobInput, cancel, Effect.STOPS, DOC, toolset=Toolset.JOBS)
