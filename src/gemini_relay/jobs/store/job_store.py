"""The job store contract: what a job is on disk (or in memory), independent of who runs it.

A job has one writer per record: the server writes `meta` (once) and cancel requests; the supervisor writes
`supervisor`, `progress`, the streamed text and, last, the terminal `result` (durable, then the exit sentinel).
Status is derived from these records on every read (see job_status.py), never kept only in memory.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

from gemini_relay.core.result import RunResult
from gemini_relay.core.spec import RunSpec
from gemini_relay.core.vocabulary import BackendName, FailureReason, RunState
from gemini_relay.errors import InputError, RelayError, RunFailed
from gemini_relay.supervise.liveness import ProcessInfo

# Shell-convention exit sentinels written last by the supervisor (agy-mcp's contract).
EXIT_DONE = 0
EXIT_FAILED = 1
EXIT_TIMEOUT = 124
EXIT_SPAWN_FAILED = 127
EXIT_CANCELLED = 143


class JobNotFound(InputError):
    def __init__(self, job_id: str) -> None:
        super().__init__(f"No job {job_id!r} (unknown, or swept after its TTL)")
        self.job_id = job_id


class JobConflict(InputError):
    """A request collides with another job (same idempotency key for another request, or a busy conversation)."""


class StoreUnwritable(RelayError):
    """The state dir refused a write (full, read-only, no permission) while a job was being created."""

    def __init__(self, root: Path | str, exc: OSError) -> None:
        super().__init__(
            f"the state dir {root} is not writable ({exc.strerror or exc}): free space or set GEMINI_RELAY_STATE_DIR"
        )


def unrecordable(root: Path | str, exc: OSError | JobNotFound, *, partial_text: str = "") -> RunFailed:
    """The failure of a run whose record the state dir refused (full, read-only) or lost (its job dir removed while
    it ran): the run stops, its text so far goes back to its caller, and it can be run again once there is room."""
    if isinstance(exc, JobNotFound):
        message = "the job's record was removed from the state dir while it ran"
    else:
        message = f"the state dir {root} refused the job's record ({exc.strerror or exc})"
    return RunFailed(
        message,
        reason=FailureReason.STORE_UNWRITABLE,
        partial_text=partial_text,
        retryable=True,
        recovery=f"Free space in {root} (or make it writable, or set GEMINI_RELAY_STATE_DIR), then run it again; "
        "with this conversationId it continues the thread.",
    )


@dataclass(frozen=True)
class JobMeta:
    job_id: str
    tool: str
    backend: BackendName
    spec: RunSpec
    created_at: float  # wall clock (time.time())
    priority: str = "normal"
    idempotency_key: str | None = None  # sha256 of the caller's key, never the key itself
    request_hash: str | None = None
    owner: ProcessInfo | None = None  # the server that queued it; a dead owner's queued job is adopted
    # What the job runs with (the creating server's relay-relevant environment): whoever adopts or re-runs it uses
    # this, never its own. Kept apart from meta.json (it holds API keys), 0600, and removed when the job ends.
    env: Mapping[str, str] | None = field(default=None, repr=False, compare=False)

    def to_json(self) -> dict[str, Any]:
        # Field by field: asdict() would deep-copy the spec only for spec.to_json() to replace it. `env` is never in
        # meta.json: the store keeps it in a file of its own.
        return {
            "job_id": self.job_id,
            "tool": self.tool,
            "backend": self.backend,
            "spec": self.spec.to_json(),
            "created_at": self.created_at,
            "priority": self.priority,
            "idempotency_key": self.idempotency_key,
            "request_hash": self.request_hash,
            "owner": asdict(self.owner) if self.owner else None,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> JobMeta:
        return cls(
            job_id=data["job_id"],
            tool=data["tool"],
            backend=BackendName(data["backend"]),
            spec=RunSpec.from_json(data["spec"]),
            created_at=float(data["created_at"]),
            priority=data.get("priority", "normal"),
            idempotency_key=data.get("idempotency_key"),
            request_hash=data.get("request_hash"),
            owner=ProcessInfo(**data["owner"]) if data.get("owner") else None,
        )


@dataclass(frozen=True)
class Progress:
    state: RunState
    session_id: str | None = None
    model: str | None = None
    cli_pid: int | None = None
    cli_start_ticks: int | None = None
    started_at: float | None = None  # wall clock
    updated_at: float = 0.0
    step_type: str | None = None  # the upstream's current step (agy-mcp's step_type); a job that ended keeps its last


@dataclass(frozen=True)
class JobResult:
    """The job's terminal record, written once and durably by the supervisor: the run's result plus its times.

    On disk it is the RunResult's own JSON with four job fields beside it (one codec, see core/result.py).
    """

    result: RunResult
    started_at: float | None = None
    ended_at: float = 0.0
    exit_code: int = EXIT_DONE
    step_type: str | None = None  # the last step the upstream reported (agy-mcp keeps it on an ended job)

    @property
    def state(self) -> RunState:
        return self.result.state

    def to_json(self) -> dict[str, Any]:
        return {**self.result.to_json(), "started_at": self.started_at, "ended_at": self.ended_at,
                "exit_code": self.exit_code, "step_type": self.step_type}  # fmt: skip

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> JobResult:
        return cls(
            result=RunResult.from_json(data),
            started_at=data.get("started_at"),
            ended_at=float(data.get("ended_at") or 0.0),
            exit_code=int(data.get("exit_code", EXIT_DONE)),
            step_type=data.get("step_type") if isinstance(data.get("step_type"), str) else None,
        )


@dataclass
class IdempotencyBinding:
    job_id: str
    request_hash: str
    extra: dict[str, Any] = field(default_factory=dict[str, Any])


class JobStore(Protocol):
    """Persistence for jobs. Implementations: FileJobStore (durable, cross-process), MemoryJobStore (reference)."""

    def create(self, meta: JobMeta) -> None: ...
    def meta(self, job_id: str) -> JobMeta: ...
    def job_ids(self) -> list[str]: ...
    def write_supervisor(self, job_id: str, info: ProcessInfo) -> None: ...
    def supervisor(self, job_id: str) -> ProcessInfo | None: ...
    def write_progress(self, job_id: str, progress: Progress) -> None: ...
    def progress(self, job_id: str) -> Progress | None: ...
    def append_text(self, job_id: str, text: str) -> None: ...
    def text(self, job_id: str) -> str: ...
    def read_output(self, job_id: str, offset: int) -> bytes:
        """The streamed text's UTF-8 bytes from `offset` on (a follower reads only what is new)."""
        ...

    def write_result(self, job_id: str, result: JobResult) -> None:
        """The terminal record; the job's environment goes with it (forget_env)."""
        ...

    def forget_env(self, job_id: str) -> None:
        """Drop the environment the job was created with (its API keys): it is running or has ended, so nothing
        will start it again. Harmless when there is none."""
        ...

    def record_files(self, job_id: str, paths: list[str]) -> None:
        """Record files the job produced (absolute paths): tools know them, the supervisor may not."""
        ...

    def files(self, job_id: str) -> list[str]: ...
    def result(self, job_id: str) -> JobResult | None: ...
    def request_cancel(self, job_id: str) -> None: ...
    def cancel_requested(self, job_id: str) -> bool: ...
    def mark_collected(self, job_id: str) -> None: ...
    def collected(self, job_id: str) -> bool: ...
    def mark_dismissed(self, job_id: str) -> None:
        """gemini-cancel asked this job to stop: hook-wait owes no wake if it then ends cancelled."""
        ...

    def dismissed(self, job_id: str) -> bool: ...
    def finished_at(self, job_id: str) -> float | None: ...
    def delete(self, job_id: str) -> None: ...
    def bind_idempotency(self, key: str, job_id: str, request_hash: str) -> str: ...
    def unbind_idempotency(self, key: str) -> None: ...
    def bound_job(self, key: str) -> str | None:
        """The job `key` is bound to while that job is kept, without binding anything."""
        ...


def dumps(data: object) -> bytes:
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: its \u escape is valid JSON where raw UTF-8 cannot exist
        return json.dumps(data, separators=(",", ":")).encode("ascii")
