"""The server's side of a run in the relay host. RunFollower is what a server holds of the one executor: a call's
run is checked here (before a job exists), created in the relay host (the shared one, or the server's own with
GEMINI_RELAY_HOST=off: the same code), then attached to: the host's record of the run (where its events are folded,
once) is followed in this server's for keepalives, and its result is the call's. No queue, cap or pacing here (the
host's engine owns them); the deadline is kept as a backstop past the host's own. Jobs is the management API over
the shared store the tools use: cancel goes to the host, a queued job of a dead host is adopted by asking the (new)
host to run it."""

from __future__ import annotations

import contextlib
import contextvars
import math
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import anyio

from gemini_relay.backends.asking import ASKER, Question
from gemini_relay.backends.base import Backend
from gemini_relay.core.result import RunResult
from gemini_relay.core.spec import RunSpec
from gemini_relay.core.vocabulary import BackendName, RunState
from gemini_relay.errors import RelayError, RunTimedOut
from gemini_relay.jobs.engine.active import ActiveRuns
from gemini_relay.jobs.engine.engine import checked_record
from gemini_relay.jobs.engine.record import RunRecord
from gemini_relay.jobs.engine.runners import JobOptions
from gemini_relay.jobs.host_connection import LOST, HostConnection
from gemini_relay.jobs.host_prewarm import prewarm_message
from gemini_relay.jobs.protocol import (
    Channel,
    HostLost,
    ask_terms,
    decode_error,
    decode_progress,
    encode_spec,
    request_line,
)
from gemini_relay.jobs.store.file_store import FileJobStore
from gemini_relay.jobs.store.job_manager import JobManager, poll_until, reap_orphan_cli
from gemini_relay.jobs.store.job_status import JobStatus, derive_status
from gemini_relay.jobs.store.job_store import JobStore
from gemini_relay.log import logger
from gemini_relay.supervise.liveness import is_alive

CANCEL_TIMEOUT_MARGIN = 10.0

# Whether anyone shows this call's progress (its caller sent a progressToken, or it is a task): a run nobody watches
# is attached to quietly, its result alone (server/relay.py sets it per call).
WATCHED: contextvars.ContextVar[bool] = contextvars.ContextVar("watched", default=True)

# The jobs a resumed task already has, in the order its handler will register runs (tasks resume their handler).
_RESUMING: contextvars.ContextVar[list[str] | None] = contextvars.ContextVar("resuming", default=None)


class _HostLost(Exception):
    """The host hung up (or was not there) before the run's result arrived."""


class RunFollower:
    """The runs of this server: created in the host (awaited on a kept connection, so the job id is known at once),
    then attached to until their result, following the host's record of each in this server's."""

    def __init__(
        self, backends: Mapping[BackendName, Backend], client: HostConnection, jobs: Jobs, store: JobStore
    ) -> None:
        self._backends = dict(backends)
        self._client = client
        self._jobs = jobs
        self._store = store
        self._runs = ActiveRuns()
        self._env = dict(client.settings.env)
        self.deadline_margin = client.settings.kill_grace + 15.0  # the host enforces the deadline itself
        self.detaching = False

    def backend(self, name: BackendName) -> Backend:
        return self._backends[name]

    @property
    def active(self) -> list[RunRecord]:
        return self._runs.records

    @contextmanager
    def resuming(self, jobs: list[str]) -> Iterator[None]:
        """Within this block (a resumed task's handler), the first runs registered are `jobs`, attached to as they
        are (followed to their recorded results); any further run is new."""
        token = _RESUMING.set(list(jobs))
        try:
            yield
        finally:
            _RESUMING.reset(token)

    async def register(self, spec: RunSpec, backend: BackendName, options: JobOptions | None = None) -> RunRecord:
        """Create the run's job in the host, within the host's bound.

        Raises:
            InputError: the request is refused before anything exists (naming the field).
            JobConflict: an idempotency key names another request, or the conversation is busy.
            StoreUnwritable, BackendUnavailable: the job could not be created.
        """
        pending = _RESUMING.get()
        if pending:
            job_id = pending.pop(0)
            meta = self._store.meta(job_id)
            return RunRecord(spec=meta.spec, backend=meta.backend, run_id=job_id)
        record = checked_record(self._backends, spec, backend)
        request = self._create_request(record, options or JobOptions())
        with anyio.CancelScope(shield=True):  # a create runs to its answer: a job half-created is nobody's
            reply = await self._client.arequest(request)
        return self._created(record, reply)

    async def execute(self, record: RunRecord) -> RunResult:
        """Attach to the run in the host until its result (see ActiveRuns.run for what it raises). Cancelling the
        caller, or `cancel`, cancels the job in the host (unless the server is detaching)."""
        backend = self._backends[record.backend]

        async def attached() -> RunResult:
            timeout = record.spec.timeout_seconds
            with anyio.move_on_after(timeout + self.deadline_margin):
                return await self.run(record)
            raise RunTimedOut(backend.command, timeout, partial_text=record.text)  # the host itself did not stop it

        return await self._runs.run(record, attached)

    def cancel(self, run_id: str, message: str) -> bool:
        return self._runs.cancel(run_id, message)

    def cancel_all(self, message_for: str) -> int:
        """Stop every run this server is attached to; each fails with `<tool> <message_for>`. Returns how many."""
        return self._runs.cancel_all(message_for)

    def _create_request(self, record: RunRecord, options: JobOptions) -> dict[str, Any]:
        return {
            "op": "create",
            "run_id": record.run_id,
            "spec": encode_spec(record.spec),
            "backend": record.backend,
            "options": {"priority": options.priority, "idempotency_key": options.idempotency_key},
            "env": self._env,
            "ask": ask_terms(ASKER.get()),
        }

    @staticmethod
    def _created(record: RunRecord, reply: dict[str, Any]) -> RunRecord:
        if "error" in reply:
            raise decode_error(reply["error"])
        if "job_id" not in reply:  # a host of another protocol: never "internal error" for its answer
            raise HostLost(f"it answered a create without a job id: {sorted(reply)}")
        record.run_id = str(reply["job_id"])
        record.reused_job = bool(reply.get("reused"))
        return record

    def detach(self) -> None:
        """The server is shutting down: its runs go on in the host and stay collectable."""
        self.detaching = True

    async def run(self, record: RunRecord) -> RunResult:
        """Attach to the job in the host and follow its record in `record` until its result. Cancelled (at any
        point, attaching included), it cancels the job in the host, unless the server is detaching."""
        try:
            for attempt in range(2):
                try:
                    return await self._run_attached(record)
                except _HostLost:
                    if attempt:
                        break
                    # A job still queued in a host that died is run at once by the next one (started now if need
                    # be), with the environment it was created with; one that was running ends interrupted there.
                    logger.info("The relay host went away during job %s; attaching to a new one", record.run_id)
            return await self._jobs.follow_store(record)
        except anyio.get_cancelled_exc_class():
            if not self.detaching:
                with anyio.CancelScope(shield=True), anyio.move_on_after(self._client.settings.kill_grace + 10):
                    await self._jobs.cancel(record.run_id)
            raise

    async def _run_attached(self, record: RunRecord) -> RunResult:
        try:
            channel, message = await self._attach(record)
        except (OSError, HostLost) as exc:
            raise _HostLost from exc
        clean = False  # the run's stream ended as the protocol says: the channel can carry the next run
        try:
            while True:
                if "progress" in message:  # queued behind the host's cap, admitted, running: the keepalives say which
                    record.follow(decode_progress(message["progress"]))
                elif "question" in message:
                    await self._answer(record, message["question"])
                elif "result" in message:
                    clean = True
                    result = RunResult.from_json(message["result"])
                    # A run that ended before this server attached sends its result alone: what its progress would
                    # have told the record (its conversation, the model that really answered) comes from it.
                    record.session_id = result.conversation_id or record.session_id
                    record.model = result.model or record.model
                    return result.raise_for_failure()
                elif "error" in message:
                    clean = True
                    raise decode_error(message["error"])
                else:  # {"follow": true}: another supervisor runs it
                    clean = True
                    return await self._jobs.follow_store(record)
                message = await channel.receive()
        except LOST as exc:
            raise _HostLost from exc
        finally:
            if clean:
                await self._client.checkin(channel)
            else:
                with anyio.CancelScope(shield=True):
                    await channel.aclose()

    async def _answer(self, record: RunRecord, question: dict[str, Any]) -> None:
        """Ask this call's caller and send the answer to the host. A server with no caller of its own (a resumed
        task, a second attacher) leaves the question to the one that has one, or to the host's timeout."""
        asker = ASKER.get()
        if asker is None:
            return
        answer = await asker.ask(Question.from_json(question))
        with contextlib.suppress(*LOST, RelayError):
            await self._client.call(
                {"op": "answer", "job_id": record.run_id, "question": question.get("id"), "answer": answer.to_json()}
            )

    async def _attach(self, record: RunRecord) -> tuple[Channel, dict[str, Any]]:
        """The `run` request sent and its first reply read, on a kept channel if one is still open. Not bounded by
        the host's request bound: a host's first run of a backend imports it, which under load takes longer (the
        call's own deadline, plus a margin, is the backstop).

        Raises:
            OSError: no host answered (the store tells the outcome).
        """
        request: dict[str, Any] = {"op": "run", "job_id": record.run_id, "env": self._env}
        if not WATCHED.get():
            request["quiet"] = True
        line = request_line(request)
        while True:
            channel, reused = await self._client.checkout()
            try:
                reply = await self._client.exchange(channel, line, fresh=not reused, timeout=math.inf)
            except HostLost as exc:
                raise OSError(str(exc)) from exc
            if reply is not None:
                return channel, reply
            await self._client.drop_kept()  # they were all to the host that went away


class Jobs(JobManager):
    """The management API over the shared store, for a server whose runs are in an executor (a relay host): cancel
    goes to the host, and a queued job of a dead host is adopted by asking the (new) host to run it."""

    def __init__(self, store: FileJobStore, *, kill_grace: float, client: HostConnection) -> None:
        super().__init__(store, store.locks, kill_grace=kill_grace)
        self.client = client

    def adopt(self, job_id: str) -> RunRecord | None:
        if job_id in self._adopted:
            return None
        meta = self.store.meta(job_id)
        self._adopted.add(job_id)
        return RunRecord(spec=meta.spec, backend=meta.backend, run_id=job_id)

    async def cancel(self, job_id: str) -> JobStatus:
        """The host cancels its own runs. A job another executor runs (a draining host of an older version, another
        server's own host) gets the cancel file every host watches; none is ever signalled (each runs other jobs)."""
        self.store.request_cancel(job_id)
        try:
            reply = await self._client_cancel(job_id)
        except (OSError, ValueError, RelayError):  # no host (or a stuck one): the cancel file stops the run
            reply = {"found": False}
        status = derive_status(self.store, job_id)
        if not reply.get("found") and not status.state.terminal:
            supervisor = self.store.supervisor(job_id)
            if (supervisor is None or not is_alive(supervisor)) and status.state is RunState.QUEUED:
                self._cancel_unstarted(job_id)  # nobody runs it: it just never will
            else:
                status = await poll_until(lambda: derive_status(self.store, job_id), lambda s: s.state.terminal,
                                          timeout=self._kill_grace + CANCEL_TIMEOUT_MARGIN)  # fmt: skip
        status = derive_status(self.store, job_id)
        await reap_orphan_cli(status)
        return status

    async def prewarm(self) -> None:
        """Have the host boot this server's warm processes now (starting the host if needed), so the first call is
        warm too. Blocking socket work, so in a worker thread."""
        message = prewarm_message(self.client.settings)
        await anyio.to_thread.run_sync(lambda: self.client.request(message))

    async def _client_cancel(self, job_id: str) -> dict[str, Any]:
        # The host answers once the run has ended: within the kill grace and its own 5 s margin.
        bound = self.client.timeout + self._kill_grace + 5.0
        return await self.client.call({"op": "cancel", "job_id": job_id}, timeout=bound)

    async def follow_store(self, record: RunRecord) -> RunResult:
        """The host is gone (or another supervisor runs the job): its outcome as the store tells it."""
        status = await poll_until(lambda: derive_status(self.store, record.run_id), lambda s: s.state.terminal)
        await reap_orphan_cli(status)
        return self._finish(record, status)


__all__ = ["Jobs", "RunFollower"]
