"""RunEngine: the executor's engine. It admits runs per backend in FIFO order under one cap, paces their starts,
enforces each run's deadline from its admission, and cancels on request; every event is folded into the run's
record once, by its runner. The relay host runs it (relay_host/host.py) — the shared one, or a server's own with
GEMINI_RELAY_HOST=off; servers reach it through jobs/follower.RunFollower.

It is MCP-agnostic and does not know whether a backend spawns per run or keeps a warm process.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager

import anyio

from gemini_relay.backends.base import Backend
from gemini_relay.backends.checks import check_spec
from gemini_relay.core.pacing import PacingPolicy
from gemini_relay.core.result import RunResult
from gemini_relay.core.spec import RunSpec
from gemini_relay.core.vocabulary import BackendName, RunState
from gemini_relay.errors import BackendUnavailable, RunTimedOut
from gemini_relay.jobs.engine.active import ActiveRuns
from gemini_relay.jobs.engine.pacer import Pacer
from gemini_relay.jobs.engine.record import RunRecord
from gemini_relay.jobs.engine.runners import InlineRunner, JobOptions, QueueAware, Runner


def checked_record(backends: Mapping[BackendName, Backend], spec: RunSpec, backend: BackendName) -> RunRecord:
    """A record for `spec` once nothing would refuse it: what no backend could run, then what this one would
    refuse — all before a job exists.

    Raises:
        BackendUnavailable: the backend is not in this server.
        InputError: the request is refused (naming the field).
    """
    if backend not in backends:
        raise BackendUnavailable(f"The {backend} backend is not available in this server")
    check_spec(spec)
    backends[backend].check(spec)
    return RunRecord(spec=spec, backend=backend)


class RunEngine:
    def __init__(
        self,
        backends: Mapping[BackendName, Backend],
        *,
        max_concurrent: int,
        runner: Runner | None = None,
        pacing: PacingPolicy | None = None,
    ) -> None:
        self._backends = dict(backends)
        self.runner: Runner = runner or InlineRunner()
        self._pacers = {name: Pacer(pacing or PacingPolicy(), backend=name) for name in self._backends}
        self._limiters = {
            name: anyio.Semaphore(backend.max_concurrent or max_concurrent, fast_acquire=False)
            for name, backend in self._backends.items()
        }
        self._runs = ActiveRuns()

    def backend(self, name: BackendName) -> Backend:
        return self._backends[name]

    def new_record(self, spec: RunSpec, backend: BackendName, options: JobOptions | None = None) -> RunRecord:
        """A record registered with the runner (persisted as a job when runs are durable).

        Raises:
            InputError: the backend would refuse the request (nothing is created).
            JobConflict: an idempotency key names another request, or the conversation is busy.
        """
        return self.runner.create(checked_record(self._backends, spec, backend), options or JobOptions())

    @property
    def active(self) -> list[RunRecord]:
        return self._runs.records

    async def execute(self, record: RunRecord) -> RunResult:
        """Run `record` to a terminal state (see ActiveRuns.run for what it raises)."""
        backend = self._backends[record.backend]
        started = False

        async def admitted() -> RunResult:
            nonlocal started
            pacer, limiter = self._pacers[record.backend], self._limiters[record.backend]
            if isinstance(self.runner, QueueAware) and not pacer.starts_now(limiter.value > 0):
                self.runner.queueing(record)  # nothing awaits between this test and the slot taken in admit()
            async with pacer.admit(limiter, tool=record.spec.tool):
                started = True
                record.state = RunState.STARTING
                record.started_at = time.monotonic()
                timeout = record.spec.timeout_seconds
                with anyio.move_on_after(timeout + self.runner.deadline_margin) as deadline:
                    outcome = await self.runner.run(record, backend)
                if deadline.cancelled_caught:
                    raise RunTimedOut(backend.command, timeout, partial_text=record.text)
                return outcome

        try:
            return await self._runs.run(record, admitted)
        finally:
            if not started:
                # Refused or cancelled while queued: a durable runner must not leave the job for adoption.
                self.runner.abandon(record)

    @asynccontextmanager
    async def hold(self, backend: BackendName) -> AsyncIterator[None]:
        """One slot of `backend`'s cap, taken in turn like a run's and held for a run this engine does not run (a
        drained predecessor's, relay_host/handover.py)."""
        limiter = self._limiters.get(backend)
        if limiter is None:
            yield
            return
        async with limiter:
            yield

    def cancel(self, run_id: str, message: str) -> bool:
        """Stop one queued or running run; it fails with `message`. False when it is not here (or already ending)."""
        return self._runs.cancel(run_id, message)

    def cancel_all(self, message_for: str) -> int:
        """Stop every queued or running run; each fails with `<tool> <message_for>`. Returns how many."""
        return self._runs.cancel_all(message_for)
