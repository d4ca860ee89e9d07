"""JobProxy: what a server holds of the one executor. A call's run is checked here (before a job exists), created
in the relay host (the shared one, or the server's own with GEMINI_RELAY_HOST=off: the same code), then attached
to: the host's events are folded into this server's record for keepalives, and its result is the call's. No queue,
cap or pacing here (the host's engine owns them); the deadline is kept as a backstop past the host's own.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

import anyio

from gemini_relay.backends.base import Backend
from gemini_relay.core.result import RunResult
from gemini_relay.core.spec import RunSpec
from gemini_relay.core.vocabulary import BackendName
from gemini_relay.errors import RunTimedOut
from gemini_relay.jobs.engine.active import ActiveRuns
from gemini_relay.jobs.engine.engine import checked_record
from gemini_relay.jobs.engine.record import RunRecord
from gemini_relay.jobs.engine.runners import JobOptions
from gemini_relay.jobs.follower import HostRunner
from gemini_relay.jobs.store.base import JobStore

# The jobs a resumed task already has, in the order its handler will register runs (tasks resume their handler).
_RESUMING: contextvars.ContextVar[list[str] | None] = contextvars.ContextVar("resuming", default=None)


class JobProxy:
    def __init__(self, backends: Mapping[BackendName, Backend], runner: HostRunner, store: JobStore) -> None:
        self._backends = dict(backends)
        self.runner = runner
        self._store = store
        self._runs = ActiveRuns()

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
        """Create the run's job in the host (awaited on a kept connection: no worker thread per call).

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
        with anyio.CancelScope(shield=True):  # a create runs to its answer: a job half-created is nobody's
            created = await self.runner.acreate(record, options or JobOptions())
        return created

    async def execute(self, record: RunRecord) -> RunResult:
        """Attach to the run in the host until its result (see ActiveRuns.run for what it raises). Cancelling the
        caller, or `cancel`, cancels the job in the host (unless the server is detaching)."""
        backend = self._backends[record.backend]

        async def attached() -> RunResult:
            timeout = record.spec.timeout_seconds
            with anyio.move_on_after(timeout + self.runner.deadline_margin):
                return await self.runner.run(record, backend)
            raise RunTimedOut(backend.command, timeout, partial_text=record.text)  # the host itself did not stop it

        return await self._runs.run(record, attached)

    def cancel(self, run_id: str, message: str) -> bool:
        return self._runs.cancel(run_id, message)

    def cancel_all(self, message_for: str) -> int:
        """Stop every run this server is attached to; each fails with `<tool> <message_for>`. Returns how many."""
        return self._runs.cancel_all(message_for)

    def detach(self) -> None:
        """The server is shutting down: its runs go on in the host and stay collectable."""
        self.runner.detach()
