"""RunEngine: admits runs per backend in FIFO order, enforces the deadline, and cancels on request.

Tools create a record, then await `execute`; while it runs they may read the record (state, tail) for keepalives.
The engine is MCP-agnostic and does not know whether a backend spawns per run or keeps a warm process.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass

import anyio

from gemini_relay.backends.base import Backend
from gemini_relay.backends.checks import check_spec
from gemini_relay.core.pacing import PacingPolicy
from gemini_relay.core.result import RunResult
from gemini_relay.core.spec import RunSpec
from gemini_relay.core.vocabulary import BackendName, RunState
from gemini_relay.errors import BackendUnavailable, RunCancelled, RunFailed, RunTimedOut
from gemini_relay.jobs.models import RunRecord
from gemini_relay.jobs.pacing import Pacer
from gemini_relay.jobs.runners import AsyncCreating, InlineRunner, JobOptions, Runner
from gemini_relay.log import logger

_UNLIMITED = 1 << 30


@dataclass
class _Active:
    record: RunRecord
    scope: anyio.CancelScope
    cancel_message: str | None = None


class RunEngine:
    def __init__(
        self,
        backends: Mapping[BackendName, Backend],
        *,
        max_concurrent: int,
        runner: Runner | None = None,
        runners: Mapping[BackendName, Runner] | None = None,
        pacing: PacingPolicy | None = None,
        hosted: frozenset[BackendName] = frozenset(),
    ) -> None:
        """`hosted` backends run in the relay host, whose own engine caps, queues and paces them for every server:
        this engine passes them straight through (no second queue, no second gap), keeping deadline and cancel."""
        self._backends = dict(backends)
        self.runner: Runner = runner or InlineRunner()  # for backends without a runner of their own
        self._runners = dict(runners or {})
        self._pacers = {
            name: Pacer(PacingPolicy() if name in hosted else pacing or PacingPolicy(), backend=name.value)
            for name in self._backends
        }
        self._limiters = {
            name: anyio.Semaphore(
                _UNLIMITED if name in hosted else backend.max_concurrent or max_concurrent, fast_acquire=False
            )
            for name, backend in self._backends.items()
        }
        self._active: dict[str, _Active] = {}

    def backend(self, name: BackendName) -> Backend:
        return self._backends[name]

    def new_record(self, spec: RunSpec, backend: BackendName, options: JobOptions | None = None) -> RunRecord:
        """A record registered with the runner (persisted as a job when runs are durable).

        Raises:
            InputError: the backend would refuse the request (nothing is created).
            JobConflict: an idempotency key names another request, or the conversation is busy.
        """
        return self.runner_for(backend).create(self._checked(spec, backend), options or JobOptions())

    def _checked(self, spec: RunSpec, backend: BackendName) -> RunRecord:
        if backend not in self._backends:
            raise BackendUnavailable(f"The {backend.value} backend is not available in this server")
        check_spec(spec)  # what no backend could run, whichever backend this is
        self._backends[backend].check(spec)  # and what this one would refuse: all before a job exists
        return RunRecord(spec=spec, backend=backend)

    async def register(self, spec: RunSpec, backend: BackendName, options: JobOptions | None = None) -> RunRecord:
        """`new_record` for a caller on the server's event loop. A durable runner's create is blocking work (store
        writes, a socket round trip to the relay host), and done on the loop it stalls every other call's keepalives
        and intake in turn (200 concurrent calls: seconds). So it runs in a worker thread, unless the runner can
        await it (the relay host's round trip: one thread hop less per call)."""
        runner = self.runner_for(backend)
        if isinstance(runner, AsyncCreating):
            record = self._checked(spec, backend)
            with anyio.CancelScope(shield=True):  # like the thread it replaces: a create runs to its answer
                return await runner.acreate(record, options or JobOptions())
        return await anyio.to_thread.run_sync(self.new_record, spec, backend, options)

    def detach(self) -> None:
        """The server is shutting down: every runner leaves what can outlive it running."""
        for runner in {id(r): r for r in [self.runner, *self._runners.values()]}.values():
            runner.detach()

    def runner_for(self, backend: BackendName) -> Runner:
        """The registry chose it per backend (durable supervisor, in-process, later a warm session)."""
        return self._runners.get(backend, self.runner)

    @property
    def active(self) -> list[RunRecord]:
        return [a.record for a in self._active.values()]

    async def execute(self, record: RunRecord) -> RunResult:
        """Run `record` to a terminal state.

        Raises:
            RunTimedOut, RunCancelled, RunFailed: the run did not succeed; partial text is attached.
            BackendUnavailable: the backend could not start at all.
        """
        backend = self._backends[record.backend]
        active = _Active(record, anyio.CancelScope())
        self._active[record.run_id] = active
        started = False
        try:
            with active.scope:
                async with self._pacers[record.backend].admit(self._limiters[record.backend], tool=record.spec.tool):
                    started = True
                    record.state = RunState.STARTING
                    record.started_at = time.monotonic()
                    timeout = record.spec.timeout_seconds
                    runner = self.runner_for(record.backend)
                    with anyio.move_on_after(timeout + runner.deadline_margin) as deadline:
                        outcome = await runner.run(record, backend)
                    if deadline.cancelled_caught:
                        raise RunTimedOut(backend.command, timeout, partial_text=record.text)
            if active.scope.cancelled_caught:
                raise RunCancelled(
                    active.cancel_message or f"{record.spec.tool} was cancelled", partial_text=record.text
                )
            record.state = RunState.DONE
        except RunFailed as exc:
            if not exc.partial_text:
                exc.partial_text = record.text
            record.state = RunState.CANCELLED if isinstance(exc, RunCancelled) else RunState.FAILED
            record.failure = exc.reason
            record.error = exc.message
            raise
        except BackendUnavailable as exc:
            record.state = RunState.FAILED
            record.error = str(exc)
            raise
        except anyio.get_cancelled_exc_class():
            record.state = RunState.CANCELLED
            raise
        finally:
            if not started:
                # Refused or cancelled while queued: a durable runner must not leave the job for adoption.
                self.runner_for(record.backend).abandon(record)
            record.ended_at = time.monotonic()
            del self._active[record.run_id]
            logger.info(
                "Run %s on %s ended %s after %.1fs", record.run_id, record.backend.value, record.state, record.elapsed
            )
        return outcome

    def cancel(self, run_id: str, message: str) -> bool:
        """Stop one queued or running run; it fails with `message`. False when it is not here (or already ending)."""
        active = self._active.get(run_id)
        if active is None or active.record.state.terminal or active.scope.cancel_called:
            return False
        active.cancel_message = message
        active.scope.cancel()
        return True

    def cancel_all(self, message_for: str) -> int:
        """Stop every queued or running run; each fails with `<tool> <message_for>`. Returns how many."""
        count = 0
        for active in list(self._active.values()):
            if active.record.state.terminal or active.scope.cancel_called:
                continue
            active.cancel_message = f"{active.record.spec.tool} {message_for}"
            active.scope.cancel()
            count += 1
        return count
