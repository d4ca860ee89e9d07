"""`gemini-relay run-job <dir>`: the detached process that owns one job, so it outlives the MCP server.

It runs the job's backend through an in-process RunEngine (same decoder, deadline and group shutdown as inline
runs), mirrors progress and streamed text into the store as they arrive, and writes the terminal result durably,
the exit sentinel last. SIGTERM, SIGINT or a `cancel` file cancel the run (its process group is stopped first).
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import anyio

from gemini_relay.backends.base import Backend
from gemini_relay.backends.registry import BackendRegistry
from gemini_relay.config import Settings
from gemini_relay.core.events import AgentEvent, SessionStarted, TextDelta
from gemini_relay.core.result import RunResult
from gemini_relay.core.vocabulary import BackendName, FailureReason, RunState
from gemini_relay.errors import BackendUnavailable, InputError, RunCancelled, RunFailed, RunTimedOut
from gemini_relay.jobs.engine import RunEngine
from gemini_relay.jobs.fs_store import FileJobStore
from gemini_relay.jobs.locks import try_claim_job
from gemini_relay.jobs.models import RunRecord
from gemini_relay.jobs.store import (
    EXIT_CANCELLED,
    EXIT_DONE,
    EXIT_FAILED,
    EXIT_SPAWN_FAILED,
    EXIT_TIMEOUT,
    JobResult,
    JobStore,
    Progress,
)
from gemini_relay.log import logger
from gemini_relay.supervise.liveness import describe, start_ticks

CANCEL_POLL = 0.25  # the cancel file is the signal-free path (and a backstop for a missed SIGTERM)
PROGRESS_FLUSH = 0.25  # progress.json is rewritten at most this often while something changed


class StoreMirror:
    """Copies a live record into the store: text as it streams (partial text survives a crash), progress often."""

    def __init__(self, store: JobStore, job_id: str, record: RunRecord, started_at: float) -> None:
        self._store = store
        self._job_id = job_id
        self._record = record
        self._started_at = started_at
        self._written: Progress | None = None

    def on_event(self, event: AgentEvent) -> None:
        if isinstance(event, TextDelta) and event.text:
            self._store.append_text(self._job_id, event.text)
        elif isinstance(event, SessionStarted):
            self.flush()

    def flush(self) -> None:
        record = self._record
        state = record.state if record.state in (RunState.STARTING, RunState.RUNNING) else RunState.RUNNING
        progress = Progress(
            state=state,
            session_id=record.session_id,
            model=record.model,
            cli_pid=record.pid,
            cli_start_ticks=start_ticks(record.pid) if record.pid else None,
            started_at=self._started_at,
            updated_at=time.time(),
        )
        if self._written is None or _changed(self._written, progress):
            self._store.write_progress(self._job_id, progress)
            self._written = progress


def _changed(old: Progress, new: Progress) -> bool:
    return (old.state, old.session_id, old.model, old.cli_pid) != (new.state, new.session_id, new.model, new.cli_pid)


def run_job(job_dir: Path, lock_fds: Sequence[int] = (), claim_fd: int | None = None) -> int:
    """Entry point of the `run-job` subcommand; returns the job's exit sentinel.

    `lock_fds` are inherited conversation locks: released just before the result is written, so whoever sees the
    result may continue the conversation at once. `claim_fd` is the job's claim (locks.try_claim_job), taken by the
    spawning server; without one the supervisor claims the job itself. It is held until this process exits.
    """
    store = FileJobStore(job_dir.resolve().parent.parent)
    job_id = job_dir.name
    if (claim_fd is None and try_claim_job(store.dir(job_id)) is None) or store.result(job_id) is not None:
        logger.info("Job %s already has a supervisor or a result; this one exits untouched", job_id)
        return EXIT_DONE
    store.write_supervisor(job_id, describe(os.getpid()))
    return anyio.run(supervise, store, job_id, tuple(lock_fds))


async def supervise(
    store: JobStore,
    job_id: str,
    lock_fds: tuple[int, ...] = (),
    backends: Mapping[BackendName, Backend] | None = None,
    *,
    signals: bool = True,
) -> int:
    """Run one job to its durable result. `backends` defaults to the registry's (tests pass scripted ones);
    `signals=False` leaves SIGTERM alone (an in-process supervisor must not take the test process's signals)."""
    meta = store.meta(job_id)
    if backends is None:
        backends = BackendRegistry(Settings.from_env(cwd=meta.spec.cwd)).backends
    engine = RunEngine(backends, max_concurrent=1)
    started = time.time()
    record = RunRecord(spec=meta.spec, backend=meta.backend, run_id=job_id)
    mirror = StoreMirror(store, job_id, record, started)
    record.listener = mirror.on_event
    mirror.flush()
    async with anyio.create_task_group() as tg:
        tg.start_soon(_watch_cancel, store, job_id, engine, signals)
        tg.start_soon(_flush_progress, mirror)
        result = await _execute(engine, record, started)
        tg.cancel_scope.cancel()
    for fd in lock_fds:
        with contextlib.suppress(OSError):
            os.close(fd)
    store.write_result(job_id, result)
    logger.info("Job %s finished %s", job_id, result.state)
    return result.exit_code


async def _execute(engine: RunEngine, record: RunRecord, started: float) -> JobResult:
    """Run the job and encode how it ended; every error the run meets becomes the job's result, with its kind."""
    try:
        outcome = await engine.execute(record)
    except RunFailed as exc:
        if isinstance(exc, RunCancelled):
            code = EXIT_CANCELLED
        elif isinstance(exc, RunTimedOut):
            code = EXIT_TIMEOUT
        else:
            code = EXIT_SPAWN_FAILED if exc.reason is FailureReason.SPAWN_FAILED else EXIT_FAILED
        result = RunResult.from_error(
            exc, conversation_id=record.session_id, model=record.model, notices=tuple(record.notices)
        )
        return JobResult(result, started_at=started, ended_at=time.time(), exit_code=code)
    except (BackendUnavailable, InputError) as exc:
        failed = RunFailed(str(exc), reason=FailureReason.SPAWN_FAILED if isinstance(exc, BackendUnavailable) else
                           FailureReason.BACKEND_ERROR)  # fmt: skip
        result = RunResult.from_error(failed, text="", notices=tuple(record.notices))
        return JobResult(result, started_at=started, ended_at=time.time(), exit_code=EXIT_SPAWN_FAILED)
    return JobResult(outcome, started_at=started, ended_at=time.time(), exit_code=EXIT_DONE)


async def _watch_cancel(store: JobStore, job_id: str, engine: RunEngine, signals: bool) -> None:
    async def on_signal() -> None:
        with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT, signal.SIGHUP) as signals:
            async for _ in signals:
                engine.cancel_all("was cancelled")

    async with anyio.create_task_group() as tg:
        if signals:
            tg.start_soon(on_signal)
        while not store.cancel_requested(job_id):
            await anyio.sleep(CANCEL_POLL)
        engine.cancel_all("was cancelled")


async def _flush_progress(mirror: StoreMirror) -> None:
    while True:
        await anyio.sleep(PROGRESS_FLUSH)
        mirror.flush()
