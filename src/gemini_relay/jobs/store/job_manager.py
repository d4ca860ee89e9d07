"""JobManager: every run is a job in the store, run by an executor (a relay host: the user's shared one, or a
server's own). Jobs are created here (idempotency binding, conversation lock) by the executor, and read here by
every server: status, wait, collect, list, sweep — tools call it and hold no polling loops of their own.

Written against the JobStore protocol; the conversation locks live in the store's `locks` directory.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict
from pathlib import Path

import anyio

from gemini_relay.core.result import RunResult
from gemini_relay.core.vocabulary import FailureReason, RunState
from gemini_relay.errors import RunCancelled, RunFailed
from gemini_relay.jobs.engine.record import RunRecord
from gemini_relay.jobs.engine.runners import JobOptions
from gemini_relay.jobs.store.job_status import JobStatus, derive_status
from gemini_relay.jobs.store.job_store import (
    EXIT_CANCELLED,
    EXIT_FAILED,
    JobConflict,
    JobMeta,
    JobNotFound,
    JobResult,
    JobStore,
    StoreUnwritable,
)
from gemini_relay.jobs.store.locks import acquire_conversation_lock
from gemini_relay.jobs.store.maintenance import orphaned_queued, sweep
from gemini_relay.log import logger
from gemini_relay.streams.transcript import TAIL_CHARS
from gemini_relay.supervise.liveness import ProcessInfo, describe, is_alive
from gemini_relay.supervise.process import stop_group

POLL_INTERVAL = 0.05  # how often a follower reads the job's records: a few small reads; bounds answer latency
CANCEL_SETTLE = 5.0  # after the grace: time for the executor to write the cancelled result


def request_hash(record: RunRecord) -> str:
    """A stable digest of what was asked, to tell a retried request from a different one under the same key.

    Normalised first, so that equal requests match however they were spelled: an option spelled out with the value
    it takes anyway (`timeoutSeconds` at the default, `model: null`) is the request without it.
    Only an option the caller set to a value counts as explicit (a backend reads that to say it ignored one); the
    timeout's value is hashed, so whether it was spelled out does not matter.
    """
    spec = asdict(record.spec)
    spec.pop("tool", None)
    spec.pop("session_id", None)  # chosen fresh per request: not part of what was asked
    spec["explicit"] = sorted(
        name for name in record.spec.explicit if name in spec and name != "timeout_seconds" and spec[name]
    )
    spec["cwd"] = str(record.spec.cwd)
    spec["add_dirs"] = [str(p) for p in record.spec.add_dirs]
    # priority is not part of the match (agy-mcp's rule): a retry returns its job whatever its priority.
    body = json.dumps({"backend": record.backend, "spec": spec}, sort_keys=True, default=str)
    return hashlib.sha256(body.encode("utf-8")).hexdigest()


def _meta(record: RunRecord, options: JobOptions, env: Mapping[str, str] | None, key: str | None,
          digest: str | None) -> JobMeta:  # fmt: skip
    return JobMeta(
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


class JobManager:
    def __init__(self, store: JobStore, locks: Path, *, kill_grace: float) -> None:
        self.store = store
        self._locks = locks
        self._kill_grace = kill_grace
        self.deadline_margin = kill_grace + 15.0
        self.detaching = False
        self._lock_fds: dict[str, int] = {}
        self._adopted: set[str] = set()

    def detach(self) -> None:
        """The server is going away: its jobs go on in their executor."""
        self.detaching = True

    def job_for_key(self, idempotency_key: str) -> str | None:
        """The job an idempotency key already names (kept while that job is), or None."""
        return self.store.bound_job(hashlib.sha256(idempotency_key.encode("utf-8")).hexdigest())

    def lock_conversation(self, conversation_id: str) -> int:
        """A descriptor holding the conversation's lock (JobConflict when it is busy)."""
        return acquire_conversation_lock(self._locks, conversation_id)

    def create(self, record: RunRecord, options: JobOptions, env: Mapping[str, str] | None = None) -> RunRecord:
        """Persist the job for `record` (with `env`, what it runs with); with an idempotency key already bound to
        this request, the existing job.

        Raises:
            JobConflict: the key is bound to another request, or the conversation is already running.
            StoreUnwritable: the state dir is full or read-only (no job is left).
        """
        key = hashlib.sha256(options.idempotency_key.encode("utf-8")).hexdigest() if options.idempotency_key else None
        digest = request_hash(record) if key is not None else None  # compared only under a key
        meta = _meta(record, options, env, key, digest)
        self.store.create(meta)
        if key is not None and digest is not None:
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
                self._lock_fds[record.run_id] = self.lock_conversation(record.spec.conversation_id)
            except (RunFailed, JobConflict):
                self.store.delete(record.run_id)
                raise
            except OSError as exc:  # the lock file could not be created
                self.store.delete(record.run_id)
                raise StoreUnwritable(exc.filename or "", exc) from exc
        return record

    def prepare(self, record: RunRecord, options: JobOptions, env: Mapping[str, str] | None = None) -> JobMeta:
        """What create() writes, with the conversation lock taken but nothing written: the relay host writes it once
        the run is underway (relay_host/executor.py). Only for a job without an idempotency key (a key binds first).

        Raises:
            JobConflict: the conversation is already running.
            StoreUnwritable: the conversation's lock file could not be created.
        """
        assert not options.idempotency_key, "a keyed job is bound before it runs: create() it"
        if record.spec.conversation_id:
            try:
                self._lock_fds[record.run_id] = self.lock_conversation(record.spec.conversation_id)
            except OSError as exc:
                raise StoreUnwritable(exc.filename or "", exc) from exc
        return _meta(record, options, env, None, None)

    def adopt(self, job_id: str) -> RunRecord | None:
        """A queued job of a dead server, taken over with its conversation lock re-taken (the dead server's lock died
        with it). None when this server already adopted it, or its conversation is busy (tried again next pass).
        """
        if job_id in self._adopted:
            return None
        meta = self.store.meta(job_id)
        if meta.spec.conversation_id:
            try:
                self._lock_fds[job_id] = self.lock_conversation(meta.spec.conversation_id)
            except (RunFailed, JobConflict):
                return None
        self._adopted.add(job_id)
        return RunRecord(spec=meta.spec, backend=meta.backend, run_id=job_id)

    def abandon(self, record: RunRecord) -> None:
        """Refused or cancelled in this server's queue: end the job on disk (a shutdown leaves it for adoption)."""
        if self.detaching:
            return
        job_id = record.run_id
        if derive_status(self.store, job_id).state is RunState.QUEUED:
            now, created = time.time(), self.store.meta(job_id).created_at  # its age: how long it waited
            failed = record.state is RunState.FAILED
            error = (
                RunFailed(record.error or "the run could not start", reason=record.failure or FailureReason.UNKNOWN)
                if failed
                else RunCancelled(record.error or "cancelled before it started")
            )
            result = JobResult(RunResult.from_error(error, text=""), started_at=created, ended_at=now,
                               exit_code=EXIT_FAILED if failed else EXIT_CANCELLED)  # fmt: skip
            self.store.write_result(job_id, result)
        self.release_lock(job_id)

    def _cancel_unstarted(self, job_id: str) -> None:
        now, created = time.time(), self.store.meta(job_id).created_at  # its age: how long it waited
        cancelled = RunResult.from_error(RunCancelled("cancelled before it started"), text="")
        result = JobResult(cancelled, started_at=created, ended_at=now, exit_code=EXIT_CANCELLED)
        self.store.write_result(job_id, result)
        self.release_lock(job_id)

    def lock_for(self, job_id: str, conversation_id: str | None) -> None:
        """Take the conversation lock of a job adopted from the store (raises JobConflict when it is busy)."""
        if conversation_id:
            self._lock_fds[job_id] = self.lock_conversation(conversation_id)

    def release_lock(self, job_id: str) -> None:
        fd = self._lock_fds.pop(job_id, None)
        if fd is not None:
            os.close(fd)

    def _finish(self, record: RunRecord, status: JobStatus) -> RunResult:
        """The job's own recorded result — or, for a supervisor that vanished without one, the interrupted failure
        derived from disk — with its failure raised as the exception it was."""
        record.session_id = status.conversation_id or record.session_id
        record.model = status.model or record.model
        outcome = status.outcome
        if outcome is None:  # callers only finish terminal jobs
            raise RunFailed("the job ended without a result", reason=FailureReason.UNKNOWN)
        for notice in outcome.notices:
            record.note(notice)
        return outcome.raise_for_failure()

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
        silent for it). A read: a mark the state dir refuses (full, read-only) is logged and the status answers."""
        status = derive_status(self.store, job_id)
        await reap_orphan_cli(status)
        if status.state.terminal and not self.store.collected(job_id):
            try:
                self.store.mark_collected(job_id)
            except (OSError, JobNotFound) as exc:  # a full or read-only state dir: the read still answers
                logger.warning("Could not mark job %s collected (%s)", job_id, getattr(exc, "strerror", None) or exc)
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


async def reap_orphan_cli(status: JobStatus, grace: float = 2.0) -> None:
    """A supervisor killed outright leaves its CLI running in its own session: stop that group too."""
    if status.orphan_cli is None:
        return
    pid, ticks = status.orphan_cli
    if is_alive(ProcessInfo(pid=pid, start_ticks=ticks)):
        logger.info("Stopping the CLI process group %d left by a dead supervisor", pid)
        await stop_group(pid, grace)
