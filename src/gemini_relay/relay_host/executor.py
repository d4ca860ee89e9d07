"""JobExecutor: the relay host's runner. Jobs are created in the store as JobManager.create does (idempotency,
conversation lock, held by the host), the backend runs in the host process, and every event is folded into the run's
record (the one fold), mirrored into the store (so any server's gemini-status sees it and a crash keeps the partial
text), and the record's changes go to the servers attached to the run (LiveJob) as they happen. The host is recorded
as the job's supervisor: if it dies, derive_status says `interrupted`.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import anyio

from gemini_relay.backends.asking import ASKER, Asker, AskOutcome, Unasked
from gemini_relay.backends.base import Backend
from gemini_relay.core.events import AgentEvent
from gemini_relay.core.result import RunResult
from gemini_relay.core.vocabulary import FailureReason, RunState
from gemini_relay.errors import BackendUnavailable, InputError, RunCancelled, RunFailed, RunTimedOut
from gemini_relay.jobs.engine.engine import RunEngine
from gemini_relay.jobs.engine.record import RecordChange, RunRecord
from gemini_relay.jobs.engine.runners import JobOptions, consume, outcome_from_record
from gemini_relay.jobs.protocol import Channel, encode_progress
from gemini_relay.jobs.store.file_store import FileJobStore
from gemini_relay.jobs.store.job_manager import JobManager
from gemini_relay.jobs.store.job_store import (
    EXIT_CANCELLED,
    EXIT_DONE,
    EXIT_FAILED,
    EXIT_SPAWN_FAILED,
    EXIT_TIMEOUT,
    JobConflict,
    JobMeta,
    JobNotFound,
    JobResult,
    Progress,
    StoreUnwritable,
    unrecordable,
)
from gemini_relay.jobs.store.locks import try_claim_job
from gemini_relay.log import logger
from gemini_relay.relay_host.questions import Questions
from gemini_relay.relay_host.store_mirror import StoreMirror
from gemini_relay.supervise.liveness import describe

RECORD_ERRORS = (OSError, JobNotFound)  # a full or read-only state dir, a job dir removed while its job runs
MAX_UNRECORDED = 64  # unrecorded results kept for late attachers; each holds its run's text


class LiveJob:
    """A run in this host: the changes of its record so far and, at the end, its result, for every server attached
    to it (each shows them in its keepalives: the run's events are folded here, once)."""

    def __init__(self, record: RunRecord) -> None:
        self.record = record
        # What an attached server replays: every change of the record (from queued in this host's engine on) and
        # every question.
        self.messages: list[dict[str, Any]] = []
        self.result: RunResult | None = None
        self.questions = Questions()
        self.asker: Asker = Unasked(AskOutcome.NO_CALLER)  # set from the create request (relay_host/questions.py)
        self._changed = anyio.Event()
        # Set once the job is in the store (its run underway, or queued) or its run ended: its creator's reply waits.
        self.underway = anyio.Event()
        self._shown: RecordChange | None = None
        self._chunks = 0  # the record's streamed pieces already sent
        self.progressed()

    def progressed(self) -> None:
        """The record changed (admitted, or an event folded in): what an attached server shows of it goes out."""
        record = self.record
        text, self._chunks = record.streamed_since(self._chunks)
        shown = RecordChange(record.state, record.session_id, record.model)
        if text or shown != self._shown:
            self._shown = shown
            self.messages.append({"progress": encode_progress(replace(shown, text=text))})
            self._wake()

    def publish_question(self, question: dict[str, Any]) -> None:
        self.messages.append({"question": question})
        self._wake()

    def finish(self, result: RunResult) -> None:
        self.result = result
        self._wake()

    def _wake(self) -> None:
        changed, self._changed = self._changed, anyio.Event()
        changed.set()

    async def stream(self, channel: Channel, *, progress: bool = True) -> None:
        """Every change (from the first: a late attacher misses nothing), then the result with its whole text.
        Without `progress` only the questions go before the result: each message wakes the server, and a call that
        shows no progress has nothing to do with them (the result carries the text, session and model)."""
        sent = 0
        while True:
            changed = self._changed
            while sent < len(self.messages):
                message = self.messages[sent]
                sent += 1
                question = message.get("question")
                if question is None and not progress:
                    continue
                if question is None or question["id"] not in self.questions.settled:  # an answered one is not news
                    await channel.send(message)
            if self.result is not None and sent == len(self.messages):
                await channel.send({"result": self.result.to_json()})
                return
            if changed is self._changed:
                await changed.wait()

    async def ended(self, timeout: float) -> bool:
        with anyio.move_on_after(timeout):
            while self.result is None:
                await self._changed.wait()
        return self.result is not None


class JobExecutor:
    """The relay host's Runner: it creates jobs in the store (with their locks, through the store's JobManager), runs
    each one here, mirroring its record to the store, and records its result."""

    def __init__(self, store: FileJobStore, *, kill_grace: float) -> None:
        self.store = store  # the claims are flocks in the job dirs
        self.jobs = JobManager(store, store.locks, kill_grace=kill_grace)
        self.deadline_margin = 0.0  # the engine's own deadline stops an in-process run
        self.backends: dict[str, Backend] = {}  # job id → the backend built from the calling server's settings
        self.live: dict[str, LiveJob] = {}
        self._claims: dict[str, int] = {}
        self.unrecorded: dict[str, JobResult] = {}  # results the state dir refused, newest last (attachers get them)
        self._unwritten: set[str] = set()  # of those, the ones still to write once there is room
        # Jobs created but not written yet (create_later): written once their run is underway, or must queue.
        self.unborn: dict[str, JobMeta] = {}
        self.refused: dict[str, StoreUnwritable | JobConflict] = {}  # of those, the ones the store refused

    def claim(self, job_id: str) -> bool:
        """Take the job's claim for as long as this host runs it: two executors (the shared host, a server's own,
        a successor) that both find it queued never both run it. False when another holds it."""
        try:
            fd = try_claim_job(self.store.dir(job_id))
        except OSError as exc:  # a full or read-only state dir: a fresh job runs unclaimed, an adoption waits
            logger.warning("Could not claim job %s (%s)", job_id, exc.strerror or exc)
            return False
        if fd is None:
            return False
        self._claims[job_id] = fd
        return True

    def release(self, job_id: str) -> None:
        """Let go of the job's conversation lock and claim (it ended, or was not taken up after all)."""
        self.jobs.release_lock(job_id)
        claim = self._claims.pop(job_id, None)
        if claim is not None:
            os.close(claim)

    def create(self, record: RunRecord, options: JobOptions, env: Mapping[str, str] | None = None) -> RunRecord:
        """The job created in the store (JobManager.create: its idempotency key and conversation lock)."""
        return self.jobs.create(record, options, env)

    def create_later(self, record: RunRecord, options: JobOptions, env: Mapping[str, str] | None = None) -> RunRecord:
        """A fresh job without an idempotency key, written to the store only once its run is underway (its prompt
        on its way) or must wait for its turn (queueing): the six files of a new job took ~2 ms of a warm later ask
        before its prompt. Until then nobody knows its id (its creator's reply waits), so nothing can adopt it: a
        host that dies first leaves no job, and its warm CLI dies with it.

        Raises:
            JobConflict: the conversation is already running.
        """
        self.unborn[record.run_id] = self.jobs.prepare(record, options, env)
        return record

    def queueing(self, record: RunRecord) -> None:
        """The engine's word that this run waits for a slot: a job not written yet is written as queued (with its
        environment, for adoption) before it waits."""
        if record.run_id in self.unborn:
            self.materialize(record, started=False)

    def materialize(self, record: RunRecord, *, started: bool, progress: Progress | None = None) -> None:
        """Write a job kept unborn: as queued, or (`started`) with this host as its supervisor and no environment
        (it will not be adopted, so its secrets never touch the disk, and it needs no claim; a queued one is claimed).

        Raises:
            RunFailed: the state dir refused it (STORE_UNWRITABLE); its creator is told (refused).
        """
        job_id = record.run_id
        meta = self.unborn.pop(job_id, None)
        if meta is None:
            return
        live = self.live.get(job_id)
        try:
            if started:
                supervisor = describe(os.getpid(), shared=True)
                self.store.create(replace(meta, env=None), supervisor=supervisor, progress=progress)
            else:
                self.store.create(meta)
        except (StoreUnwritable, JobConflict) as exc:
            self.refused[job_id] = exc
            cause = exc.__cause__ if isinstance(exc.__cause__, OSError) else OSError(str(exc))
            raise unrecordable(self.store.root, cause, partial_text=record.text) from exc
        finally:
            if live is not None:
                live.underway.set()
        if not started:
            self.claim(job_id)  # a claim settles who adopts a queued job; one born supervised is never queued

    def lock_for(self, job_id: str, conversation_id: str | None) -> None:
        self.jobs.lock_for(job_id, conversation_id)

    def detach(self) -> None:
        """The host never detaches from its runs: they end (or are cancelled) in it."""

    def abandon(self, record: RunRecord) -> None:
        """JobManager.abandon, whose write the state dir may refuse: the job's end is then kept in memory (execute
        records it later), never an error out of the engine."""
        if record.run_id in self.unborn:
            try:
                self.materialize(record, started=False)  # its end is recorded like any queued job's
            except RunFailed:  # the state dir refused the job itself: its creator hears why
                self.jobs.release_lock(record.run_id)
                return
        try:
            self.jobs.abandon(record)
        except RECORD_ERRORS as exc:
            logger.warning("Could not record the end of queued job %s (%s)", record.run_id, _why(exc))
            self.jobs.release_lock(record.run_id)

    async def run(self, record: RunRecord, backend: Backend) -> RunResult:
        job_id = record.run_id
        backend = self.backends.get(job_id, backend)
        mirror = StoreMirror(self.store, job_id, record, time.time())
        live = self.live.get(job_id)
        if live is not None:
            live.progressed()  # admitted: starting

        def listen(event: AgentEvent) -> None:
            if live is not None:
                live.progressed()
            if job_id in self.unborn:  # the first event: the prompt is on its way, the job is written now
                progress = mirror.current()
                self.materialize(record, started=True, progress=progress)  # RunFailed into the run's loop
                mirror.written(progress)
            try:
                mirror.on_event(event)
                mirror.flush()  # writes only when state, session, model, CLI pid or step changed
            except RECORD_ERRORS as exc:  # raised into the run's loop: its backend is closed, the run fails
                raise self._unrecordable(exc, record) from exc

        if job_id not in self.unborn:  # written before it started (queued): it is started now
            try:
                self.store.write_supervisor(job_id, describe(os.getpid(), shared=True))
                # Started: nothing will adopt it again, so its secrets leave the disk now, not only with its result
                # (a host killed mid-run writes none).
                self.store.forget_env(job_id)
                mirror.flush()
            except RECORD_ERRORS as exc:
                raise self._unrecordable(exc, record) from exc
        record.listener = listen
        token = ASKER.set(live.asker if live is not None else None)
        try:
            await consume(backend, record)
        finally:
            ASKER.reset(token)
        return outcome_from_record(record, job_id)

    def _unrecordable(self, exc: OSError | JobNotFound, record: RunRecord) -> RunFailed:
        logger.warning("Job %s failed: its record could not be written (%s)", record.run_id, _why(exc))
        return unrecordable(self.store.root, exc, partial_text=record.text)

    async def execute(self, engine: RunEngine, record: RunRecord) -> JobResult:
        """Run the job through the host's engine (cap, FIFO, pacing, deadline) to its durable result. A result the
        state dir refuses stays in memory: its callers get it, and it is written once there is room again."""
        job_id = record.run_id
        final: JobResult | None = None  # what the store holds: read back only when someone else wrote it
        try:
            result = await execute_to_result(engine, record, time.time())
            self.jobs.release_lock(job_id)  # before the result: whoever sees it may continue the conversation at once
            if job_id in self.unborn:  # it ended before its first event (it failed to start, or was cancelled)
                with contextlib.suppress(RunFailed):
                    self.materialize(record, started=True)
            if job_id in self.refused:
                final = result  # no job to record it in: its creator is told the state dir refused it
                return result
            final = self._record(job_id, result)
            logger.info("Job %s finished %s", job_id, final.state)
            return final
        finally:
            self.release(job_id)
            self.unborn.pop(job_id, None)
            self.backends.pop(job_id, None)
            live = self.live.pop(job_id, None)
            if live is not None:
                live.underway.set()
                stored = final or self._stored(job_id)
                if stored is not None:
                    live.finish(stored.result)

    def _record(self, job_id: str, result: JobResult) -> JobResult:
        """The job's result as written (or as abandon() wrote it already), or kept in memory when it cannot be."""
        try:
            stored = self.store.result(job_id)  # abandon() already ended a job refused in the queue
            if stored is not None:
                return stored
            self.store.write_result(job_id, result)
        except RECORD_ERRORS as exc:
            logger.warning("Job %s: its result could not be recorded (%s); kept in memory", job_id, _why(exc))
            if result.state is RunState.DONE:
                notice = (
                    f"This answer could not be recorded in the job store ({_why(exc)}); gemini-status may not show it."
                )
                result = replace(result, result=replace(result.result, notices=(*result.result.notices, notice)))
            self.unrecorded[job_id] = result
            self._unwritten.add(job_id)
            while len(self.unrecorded) > MAX_UNRECORDED:
                oldest = next(iter(self.unrecorded))
                del self.unrecorded[oldest]
                self._unwritten.discard(oldest)
        return result

    def _stored(self, job_id: str) -> JobResult | None:
        try:
            return self.store.result(job_id)
        except RECORD_ERRORS:
            return self.unrecorded.get(job_id)

    def record_unrecorded(self) -> None:
        """Write the results the state dir refused, now that it may have room (called now and then, and at exit);
        a job whose directory is gone has nothing to write into."""
        for job_id in sorted(self._unwritten):
            result = self.unrecorded.get(job_id)
            try:
                if result is not None and self.store.result(job_id) is None:
                    self.store.write_result(job_id, result)
                    logger.info("Job %s: its result is recorded", job_id)
            except JobNotFound:
                pass  # nowhere to write it: attachers still get it from memory
            except OSError:
                continue  # still no room: next time
            self._unwritten.discard(job_id)


def _why(exc: OSError | JobNotFound) -> str:
    return (exc.strerror if isinstance(exc, OSError) else None) or str(exc)


async def execute_to_result(engine: RunEngine, record: RunRecord, started: float) -> JobResult:
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
        receipt = replace(exc.receipt, job_id=record.run_id) if exc.receipt is not None else None
        result = RunResult.from_error(
            exc, conversation_id=record.session_id, model=record.model, notices=tuple(record.notices), receipt=receipt
        )
        return JobResult(result, started_at=started, ended_at=time.time(), exit_code=code, step_type=record.step_type)
    except (BackendUnavailable, InputError) as exc:
        failed = RunFailed(str(exc), reason=FailureReason.SPAWN_FAILED if isinstance(exc, BackendUnavailable) else
                           FailureReason.BACKEND_ERROR)  # fmt: skip
        result = RunResult.from_error(failed, text="", notices=tuple(record.notices))
        return JobResult(result, started_at=started, ended_at=time.time(), exit_code=EXIT_SPAWN_FAILED)
    return JobResult(outcome, started_at=started, ended_at=time.time(), exit_code=EXIT_DONE, step_type=record.step_type)
