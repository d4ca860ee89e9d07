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

from gemini_relay.core.vocabulary import FailureReason, RunState
from gemini_relay.jobs.store.base import JobMeta, JobResult, JobStore
from gemini_relay.supervise.liveness import is_alive

INTERRUPTED = "the job's supervisor exited without writing a result (interrupted)"
INTERRUPTED_RECOVERY = (
    "No final result was recorded. Start a new run with this conversationId to continue the thread without "
    "restating the task."
)


@dataclass(frozen=True)
class JobStatus:
    job_id: str
    tool: str
    backend: str
    state: RunState
    created_at: float
    elapsed: float
    result: str | None = None
    error: str | None = None
    failure_reason: FailureReason | None = None
    partial: bool = False
    recovery: str | None = None
    retryable: bool | None = None
    error_id: str | None = None
    conversation_id: str | None = None
    model: str | None = None
    usage: dict[str, int] | None = None
    turns: int | None = None
    notices: tuple[str, ...] = ()
    structured_output: Any = None
    has_structured_output: bool = False
    files: tuple[str, ...] = ()  # what a media job wrote (absolute paths)
    orphan_cli: tuple[int, int | None] | None = None  # (pid, start ticks) of a CLI left by a dead supervisor

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "job_id": self.job_id,
            "state": self.state.value,
            "elapsed": f"{self.elapsed:.1f}s",
            "tool": self.tool,
            "backend": self.backend,
        }
        optional = {
            "result": self.result,
            "error": self.error,
            "failure_reason": self.failure_reason.value if self.failure_reason else None,
            "partial": self.partial if self.state.terminal else None,
            "recovery": self.recovery,
            "retryable": self.retryable,
            "error_id": self.error_id,
            "conversation_id": self.conversation_id,
            "model": self.model,
            "usage": self.usage,
            "turns": self.turns,
            "notices": list(self.notices) or None,
            "structured_output": self.structured_output if self.has_structured_output else None,
            "files": list(self.files) or None,
        }
        data.update({k: v for k, v in optional.items() if v is not None})
        return data


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
    )
    if supervisor is None:
        return base
    if is_alive(supervisor):
        return replace(base, state=progress.state if progress is not None else RunState.STARTING)
    text = store.text(job_id)
    orphan = (progress.cli_pid, progress.cli_start_ticks) if progress and progress.cli_pid else None
    return replace(
        base,
        state=RunState.FAILED,
        result=text or None,
        error=INTERRUPTED,
        failure_reason=FailureReason.INTERRUPTED,
        partial=True,
        recovery=INTERRUPTED_RECOVERY if not text and base.conversation_id else None,
        orphan_cli=orphan,
    )


def _from_result(meta: JobMeta, job: JobResult) -> JobStatus:
    result, failure = job.result, job.result.failure
    started = job.started_at or meta.created_at
    return JobStatus(
        job_id=meta.job_id,
        tool=meta.tool,
        backend=meta.backend,
        state=result.state,
        created_at=meta.created_at,
        elapsed=max(0.0, job.ended_at - started),
        result=result.text or None,
        error=failure.message if failure else None,
        failure_reason=failure.reason if failure and result.state is RunState.FAILED else None,
        partial=result.partial,
        recovery=failure.recovery if failure else None,
        retryable=failure.retryable if failure else None,
        error_id=failure.error_id if failure else None,
        conversation_id=result.conversation_id,
        model=result.model,
        usage=asdict(result.usage) if result.usage else None,
        turns=result.num_turns,
        notices=result.notices,
        structured_output=result.structured_output,
        has_structured_output=result.has_structured_output,
        files=result.files,
    )
