"""derive_status: a job's state read from its records on every call — never from memory alone.

terminal result present → done / failed / cancelled (as written);
supervisor recorded and alive (same pid *and* start time) → running;
supervisor recorded but gone without a result → failed, `interrupted`, with whatever text it streamed;
no supervisor yet → queued (its owning server may adopt it) or, once its owner is dead, still queued for adoption.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, replace
from typing import Any

from gemini_relay.core.result import Failure, FailureKind, RunResult
from gemini_relay.core.vocabulary import FailureReason, RunState
from gemini_relay.jobs.store.job_store import JobMeta, JobResult, JobStore
from gemini_relay.supervise.liveness import is_alive

INTERRUPTED = "the job's supervisor exited without writing a result (interrupted)"
INTERRUPTED_RECOVERY = (
    "No final result was recorded. Start a new run with this conversationId to continue the thread without "
    "restating the task."
)


@dataclass(frozen=True)
class JobStatus:
    """Where a job is. Its end, once it has one, is the run's own `RunResult` (`outcome`) — not a copy of its fields."""

    job_id: str
    tool: str
    backend: str
    state: RunState
    created_at: float
    elapsed: float
    conversation_id: str | None = None  # live: known from the first event, not only at the end
    model: str | None = None
    outcome: RunResult | None = None  # terminal: the recorded result, or the interrupted failure derived from disk
    orphan_cli: tuple[int, int | None] | None = None  # (pid, start ticks) of a CLI left by a dead supervisor
    step_type: str | None = None  # what the upstream is doing (agy's step type); an ended job keeps its last step

    @property
    def failure(self) -> Failure | None:
        return self.outcome.failure if self.outcome else None

    @property
    def failure_reason(self) -> FailureReason | None:
        """Why a failed job failed (a cancelled one has no reason)."""
        failure = self.failure
        return failure.reason if failure and self.state is RunState.FAILED else None

    @property
    def text(self) -> str:
        """The recorded answer of an ended job (possibly partial); empty while it runs."""
        return self.outcome.text if self.outcome else ""

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "job_id": self.job_id,
            "state": self.state.value,
            "elapsed": f"{self.elapsed:.1f}s",
            "tool": self.tool,
            "backend": self.backend,
            "conversation_id": self.conversation_id,
            "model": self.model,
            "step_type": self.step_type,
        }
        if self.outcome is not None:
            data.update(_outcome_json(self.outcome, self.failure_reason))
        return {k: v for k, v in data.items() if v is not None}


def _outcome_json(result: RunResult, reason: FailureReason | None) -> dict[str, Any]:
    failure = result.failure
    return {
        "result": result.text or None,
        "error": failure.message if failure else None,
        "failure_reason": reason.value if reason else None,
        "partial": result.partial,
        "recovery": failure.recovery if failure else None,
        "retryable": failure.retryable if failure else None,
        "error_id": failure.error_id if failure else None,
        "usage": _usage_json(result),
        "turns": result.num_turns,
        "num_turns": result.num_turns,  # agy-mcp's name for `turns`, kept beside it for its users
        "notices": list(result.notices) or None,
        "structured_output": result.structured_output if result.has_structured_output else None,
        "files": list(result.files) or None,
        "receipt": result.receipt.to_json() if result.receipt else None,
    }


def _usage_json(result: RunResult) -> dict[str, int] | None:
    """The run's token counts, with agy-mcp's `cache_read_tokens` beside the relay's `cached_tokens`."""
    if result.usage is None:
        return None
    usage = asdict(result.usage)
    return {**usage, "cache_read_tokens": usage["cached_tokens"]}


def derive_status(store: JobStore, job_id: str, *, now: float | None = None) -> JobStatus:
    """Raises JobNotFound for an unknown (or swept) job."""
    meta = store.meta(job_id)
    now = time.time() if now is None else now
    result = store.result(job_id)
    if result is not None:
        return _from_result(meta, result)
    progress = store.progress(job_id)
    supervisor = store.supervisor(job_id)
    started = progress.started_at if progress and progress.started_at else meta.created_at
    base = JobStatus(
        job_id=job_id,
        tool=meta.tool,
        backend=meta.backend,
        state=RunState.QUEUED,
        created_at=meta.created_at,
        elapsed=max(0.0, now - started),
        conversation_id=(progress.session_id if progress else None)
        or meta.spec.conversation_id
        or meta.spec.session_id,
        model=progress.model if progress else meta.spec.model,
        step_type=progress.step_type if progress else None,
    )
    if supervisor is None:
        return base
    if is_alive(supervisor):
        return replace(base, state=progress.state if progress is not None else RunState.STARTING)
    text = store.text(job_id)
    orphan = (progress.cli_pid, progress.cli_start_ticks) if progress and progress.cli_pid else None
    failure = Failure(
        FailureKind.FAILED,
        INTERRUPTED,
        reason=FailureReason.INTERRUPTED,
        recovery=INTERRUPTED_RECOVERY if not text and base.conversation_id else None,
    )
    interrupted = RunResult(
        state=RunState.FAILED,
        text=text,
        partial=True,
        conversation_id=base.conversation_id,
        model=base.model,
        status="ERROR",
        failure=failure,
    )
    return replace(base, state=RunState.FAILED, outcome=interrupted, orphan_cli=orphan)


def _from_result(meta: JobMeta, job: JobResult) -> JobStatus:
    result = job.result
    started = job.started_at or meta.created_at
    return JobStatus(
        job_id=meta.job_id,
        tool=meta.tool,
        backend=meta.backend,
        state=result.state,
        created_at=meta.created_at,
        elapsed=max(0.0, job.ended_at - started),
        conversation_id=result.conversation_id,
        model=result.model,
        outcome=result,
        step_type=job.step_type,
    )
