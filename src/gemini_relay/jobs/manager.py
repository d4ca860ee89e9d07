"""JobManager: every durable run is a job owned by a supervisor; the server creates, follows, waits for, cancels,
collects, adopts and sweeps jobs here alone — tools call it and hold no polling loops of their own.

Written against the JobStore protocol with an injectable Spawner (jobs/spawner.py): the server creates the job
(idempotency binding, conversation lock), the spawner starts its supervisor when the engine admits it, and the
manager follows the store for progress, text and the terminal result. Cancelling the follower cancels the job,
unless the server is shutting down (`detach`), in which case the job runs on and stays collectable.
"""

from __future__ import annotations

import codecs
import contextlib
import hashlib
import json
import math
import os
import signal
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict

import anyio

from gemini_relay.backends.base import Backend
from gemini_relay.core.events import TextDelta
from gemini_relay.core.result import RunResult
from gemini_relay.core.vocabulary import FailureReason, RunState
from gemini_relay.errors import RunCancelled, RunFailed
from gemini_relay.jobs.maintenance import orphaned_queued, sweep
from gemini_relay.jobs.models import RunRecord
from gemini_relay.jobs.runners import JobOptions
from gemini_relay.jobs.spawner import Child, Spawner
from gemini_relay.jobs.status import JobStatus, derive_status
from gemini_relay.jobs.store import (
    EXIT_CANCELLED,
    EXIT_FAILED,
    JobConflict,
    JobMeta,
    JobNotFound,
    JobResult,
    JobStore,
    StoreUnwritable,
)
from gemini_relay.log import logger
from gemini_relay.streams.transcript import TAIL_CHARS
from gemini_relay.supervise.liveness import ProcessInfo, describe, is_alive, signal_if_alive
from gemini_relay.supervise.process import stop_group

POLL_INTERVAL = 0.05  # how often a follower reads the job's records: a few small reads; bounds answer latency
CANCEL_SETTLE = 5.0  # after the grace: time for the supervisor to write the cancelled result

STILLBORN = "the job's supervisor exited before it started (interrupted); nothing ran, it is safe to try again"


def request_hash(record: RunRecord) -> str:
    """A stable digest of what was asked, to tell a retried request from a different one under the same key."""
    spec = asdict(record.spec)
    spec.pop("tool", None)
    spec.pop("session_id", None)  # chosen fresh per request: not part of what was asked
    spec["explicit"] = sorted(record.spec.explicit)
    spec["cwd"] = str(record.spec.cwd)
    spec["add_dirs"] = [str(p) for p in record.spec.add_dirs]
    body = json.dumps({"backend": record.backend.value, "spec": spec}, sort_keys=True, default=str)
    return hashlib.sha256(body.encode("utf-8")).hexdigest()


class JobManager:
    def __init__(self, store: JobStore, spawner: Spawner, *, kill_grace: float) -> None:
        self.store = store
        self._spawner = spawner
        self._kill_grace = kill_grace
        self.deadline_margin = kill_grace + 15.0
        self.detaching = False
        self._children: dict[str, Child] = {}  # job id → the supervisor this manager spawned for it
        self._lock_fds: dict[str, int] = {}
        self._adopted: set[str] = set()

    def detach(self) -> None:
        """The server is going away: leave running jobs to their supervisors."""
        self.detaching = True

    def create(self, record: RunRecord, options: JobOptions, env: Mapping[str, str] | None = None) -> RunRecord:
        """Persist the job for `record` (with `env`, what it runs with); with an idempotency key already bound to
        this request, the existing job.

        Raises:
            JobConflict: the key is bound to another request, or the conversation is already running.
            StoreUnwritable: the state dir is full or read-only (no job is left).
        """
        key = hashlib.sha256(options.idempotency_key.encode("utf-8")).hexdigest() if options.idempotency_key else None
        digest = request_hash(record)
        meta = JobMeta(
            job_id=record.run_id,
            tool=record.spec.tool,
            backend=record.backend,
            spec=record.spec,
            created_at=time.time(),
            priority=options.priority,
            idempotency_key=key,
            request_hash=digest,
            owner=describe(os.getpid()),
            env=env,
        )
        self.store.create(meta)
        if key is not None:
            try:
                bound = self.store.bind_idempotency(key, record.run_id, digest)
            except (JobConflict, StoreUnwritable):
                self.store.delete(record.run_id)
                raise
            if bound != record.run_id:
                self.store.delete(record.run_id)
                record.run_id = bound
                record.reused_job = True
                return record
        if record.spec.conversation_id:
            try:
                self._lock_fds[record.run_id] = self._spawner.lock_conversation(record.spec.conversation_id)
            except (RunFailed, JobConflict):
                self.store.delete(record.run_id)
                raise
            except OSError as exc:  # the lock file could not be created
                self.store.delete(record.run_id)
                raise StoreUnwritable(exc.filename or "", exc) from exc
        return record

    def adopt(self, job_id: str) -> RunRecord | None:
        """A queued job of a dead server, taken over with its conversation lock re-taken (the dead server's lock died
        with it). None when this server already adopted it, or its conversation is busy (tried again next pass).
        """
        if job_id in self._adopted:
            return None
        meta = self.store.meta(job_id)
        if meta.spec.conversation_id:
            try:
                self._lock_fds[job_id] = self._spawner.lock_conversation(meta.spec.conversation_id)
            except (RunFailed, JobConflict):
                return None
        self._adopted.add(job_id)
        return RunRecord(spec=meta.spec, backend=meta.backend, run_id=job_id)

    async def run(self, record: RunRecord, backend: Backend) -> RunResult:
        job_id = record.run_id
        status = derive_status(self.store, job_id)
        if status.state is RunState.QUEUED:
            if self.store.cancel_requested(job_id):
                self._cancel_unstarted(job_id)
            else:
                self._spawn(job_id)
        try:
            return await self._follow(record)
        except anyio.get_cancelled_exc_class():
            if not self.detaching:
                with anyio.CancelScope(shield=True):
                    await self.cancel(job_id)
            raise
        finally:
            self._release_lock(job_id)
            self._reap()

    async def follow(self, record: RunRecord) -> RunResult:
        """Follow a job that runs without this call (another server's, or a resumed task's) to its recorded result,
        folding its text into `record`; raises its failure as the exception it was."""
        return await self._follow(record)

    def _spawn(self, job_id: str) -> None:
        claim = self._spawner.claim(job_id)
        if claim is None:  # a supervisor of this job is already starting (another server's): follow it
            logger.info("Job %s already has a supervisor starting; following it", job_id)
            return
        fd = self._lock_fds.get(job_id)
        try:
            locks = (fd,) if fd is not None else ()
            child = self._spawner.start(job_id, locks, claim)
        finally:
            os.close(claim)  # the supervisor holds the claim now (or nobody does, if it could not be started)
        self._children[job_id] = child
        self._release_lock(job_id)  # the supervisor now holds the conversation lock through its inherited fd
        logger.info("Job %s handed to its supervisor", job_id)

    def abandon(self, record: RunRecord) -> None:
        """Refused or cancelled in this server's queue: end the job on disk (a shutdown leaves it for adoption)."""
        if self.detaching:
            return
        job_id = record.run_id
        if derive_status(self.store, job_id).state is RunState.QUEUED:
            now = time.time()
            failed = record.state is RunState.FAILED
            error = (
                RunFailed(record.error or "the run could not start", reason=record.failure or FailureReason.UNKNOWN)
                if failed
                else RunCancelled(record.error or "cancelled before it started")
            )
            result = JobResult(RunResult.from_error(error, text=""), started_at=now, ended_at=now,
                               exit_code=EXIT_FAILED if failed else EXIT_CANCELLED)  # fmt: skip
            self.store.write_result(job_id, result)
        self._release_lock(job_id)

    def _cancel_unstarted(self, job_id: str) -> None:
        now = time.time()
        cancelled = RunResult.from_error(RunCancelled("cancelled before it started"), text="")
        result = JobResult(cancelled, started_at=now, ended_at=now, exit_code=EXIT_CANCELLED)
        self.store.write_result(job_id, result)
        self._release_lock(job_id)

    def _release_lock(self, job_id: str) -> None:
        fd = self._lock_fds.pop(job_id, None)
        if fd is not None:
            os.close(fd)

    def _reap(self) -> None:
        self._children = {job: c for job, c in self._children.items() if c.poll() is None}

    def _stillborn(self, job_id: str, status: JobStatus) -> bool:
        """The supervisor this manager spawned exited before recording itself (killed at birth): end the job.

        Nothing ran (the backend starts only after supervisor.json), so a re-spawn would be safe; the job is failed
        instead, retryable, because a supervisor that dies at birth (OOM killer, a broken install, a deliberate
        kill) would most likely die again, and a caller is better served by a clear error than a second wait.
        """
        child = self._children.get(job_id)
        if status.state is not RunState.QUEUED or child is None or child.poll() is None:
            return False
        if self.store.supervisor(job_id) is not None or self.store.result(job_id) is not None:
            return False  # it recorded itself (derive_status reports its death) or it ended
        logger.warning("Job %s: its supervisor exited (code %s) before it started", job_id, child.poll())
        now = time.time()
        failed = RunFailed(STILLBORN, reason=FailureReason.INTERRUPTED, retryable=True)
        result = JobResult(RunResult.from_error(failed, text=""), started_at=now, ended_at=now, exit_code=EXIT_FAILED)
        self.store.write_result(job_id, result)
        self._release_lock(job_id)
        return True

    async def _follow(self, record: RunRecord) -> RunResult:
        job_id = record.run_id
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        offset = 0

        def catch_up() -> JobStatus:
            nonlocal offset
            status = derive_status(self.store, job_id)
            data = self.store.read_output(job_id, offset)
            offset += len(data)
            if data and (text := decoder.decode(data)):
                record.apply(TextDelta(text))
            if status.state is not RunState.QUEUED and not status.state.terminal:
                record.state = status.state
            record.session_id = status.conversation_id or record.session_id
            record.model = status.model or record.model
            return status

        status = await poll_until(catch_up, lambda s: s.state.terminal or self._stillborn(job_id, s))
        if not status.state.terminal:
            status = catch_up()  # the stillborn job's result, just written
        await reap_orphan_cli(status)
        return self._finish(record, status)

    def _finish(self, record: RunRecord, status: JobStatus) -> RunResult:
        """The job's own recorded result, decoded (its failure raised as the exception it was), or — for a
        supervisor that vanished without one — the interrupted failure derived from disk."""
        record.session_id = status.conversation_id or record.session_id
        record.model = status.model or record.model
        for notice in status.notices:
            record.note(notice)
        stored = self.store.result(record.run_id)
        if stored is not None:
            return stored.result.raise_for_failure()
        raise RunFailed(
            status.error or "the job failed",
            reason=status.failure_reason or FailureReason.UNKNOWN,
            partial_text=status.result or "",
            retryable=status.retryable,
            error_id=status.error_id,
            recovery=status.recovery,
        )

    async def cancel(self, job_id: str) -> JobStatus:
        """Ask the supervisor to stop (cancel request + SIGTERM) and wait, bounded, for the cancelled result."""
        self.store.request_cancel(job_id)
        supervisor = self.store.supervisor(job_id)
        _signal_own(supervisor, signal.SIGTERM)

        def settled(status: JobStatus) -> bool:
            nonlocal supervisor
            if status.state.terminal:
                return True
            if supervisor is None and (supervisor := self.store.supervisor(job_id)) is not None:
                _signal_own(supervisor, signal.SIGTERM)
            if supervisor is None and status.state is RunState.QUEUED:
                self._cancel_unstarted(job_id)  # never started: nothing to stop, it just never will
                return True
            return False

        await poll_until(lambda: derive_status(self.store, job_id), settled, timeout=self._kill_grace + CANCEL_SETTLE)
        status = derive_status(self.store, job_id)
        if not status.state.terminal and supervisor is not None:
            _kill_stuck(supervisor)
        await reap_orphan_cli(status)
        return status

    # --- what the tools ask -------------------------------------------------------------------------------------

    def status(self, job_id: str) -> JobStatus:
        """Raises JobNotFound for an unknown (or swept) job."""
        return derive_status(self.store, job_id)

    async def wait(
        self, job_id: str, timeout: float, *, until: Callable[[JobStatus], bool] | None = None,
        on_tail: Callable[[str], None] | None = None,
    ) -> JobStatus:  # fmt: skip
        """The job's status once `until` holds (default: it has ended) or `timeout` passed; `on_tail` gets the last
        150 characters of its text on every look (progress keepalives)."""
        done = until or (lambda s: s.state.terminal)

        def look() -> JobStatus:
            if on_tail is not None:
                on_tail(self.store.text(job_id)[-TAIL_CHARS:])
            return derive_status(self.store, job_id)

        return await poll_until(look, done, timeout=timeout)

    async def collect(self, job_id: str) -> JobStatus:
        """The status, with a dead supervisor's CLI stopped; an ended job is marked collected (hook-wait stays
        silent for it)."""
        status = derive_status(self.store, job_id)
        await reap_orphan_cli(status)
        if status.state.terminal:
            self.store.mark_collected(job_id)
        return status

    def jobs(self, state: str | None = None, limit: int | None = None) -> list[JobStatus]:
        """Every job of every server sharing the store, newest first."""
        rows = []
        for job_id in self.store.job_ids():
            with contextlib.suppress(JobNotFound):  # swept between the listing and the read
                rows.append(derive_status(self.store, job_id))
        rows.sort(key=lambda s: s.created_at, reverse=True)
        if state is not None:
            rows = [r for r in rows if r.state.value == state]
        return rows[:limit] if limit is not None else rows

    def sweep(self, ttl: float) -> list[str]:
        return sweep(self.store, ttl)

    def orphaned(self) -> list[str]:
        return orphaned_queued(self.store)


async def poll_until(
    look: Callable[[], JobStatus], done: Callable[[JobStatus], bool], *, timeout: float | None = None
) -> JobStatus:
    """The one bounded wait on a job's records: `look` every POLL_INTERVAL until `done` (or `timeout` passes)."""
    status = look()
    with anyio.move_on_after(timeout if timeout is not None else math.inf):
        while not done(status):
            await anyio.sleep(POLL_INTERVAL)
            status = look()
    return status


def _kill_stuck(supervisor: ProcessInfo) -> None:
    """A supervisor that ignored SIGTERM past the grace: kill it; its CLI group is reaped as an orphan next."""
    _signal_own(supervisor, signal.SIGKILL)


def _signal_own(supervisor: ProcessInfo | None, signum: signal.Signals) -> None:
    """Signal a job's own supervisor; never a relay host, which runs other jobs too (it watches the cancel file)."""
    if supervisor is not None and not supervisor.shared:
        signal_if_alive(supervisor, signum)


async def reap_orphan_cli(status: JobStatus, grace: float = 2.0) -> None:
    """A supervisor killed outright leaves its CLI running in its own session: stop that group too."""
    if status.orphan_cli is None:
        return
    pid, ticks = status.orphan_cli
    if is_alive(ProcessInfo(pid=pid, start_ticks=ticks)):
        logger.info("Stopping the CLI process group %d left by a dead supervisor", pid)
        await stop_group(pid, grace)
