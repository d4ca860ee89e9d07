"""Driving a backend directly, the way the engine does: `check`, then `async for event in backend.run(spec)`, the
stream always closed; for a backend that leaves the deadline to the engine, the engine's deadline is mirrored."""

from __future__ import annotations

import math
import time
from contextlib import aclosing
from dataclasses import dataclass

import anyio

from gemini_relay.backends.base import Backend
from gemini_relay.core.events import AgentEvent, Finished, RunNotice, SessionStarted, Spawned, TextDelta
from gemini_relay.core.spec import RunSpec
from gemini_relay.errors import RunFailed, RunTimedOut
from tests.backends.conformance.adapters import Adapter, open_run

BOUND = 60.0  # every run ends within this, whatever happens (the real CLI spawns Node)
OWN_DEADLINE_SLACK = 10.0  # a backend that enforces the deadline itself gets this long past it before the harness


@dataclass
class Run:
    events: list[AgentEvent]
    error: RunFailed | None
    elapsed: float

    @property
    def text(self) -> str:
        return text_of(self.events)

    @property
    def finished(self) -> Finished:
        last = self.events[-1]
        assert isinstance(last, Finished), self.events
        return last

    def session(self) -> SessionStarted:
        """The run's SessionStarted: the first event other than a RunNotice or Spawned."""
        first = next(e for e in self.events if not isinstance(e, RunNotice | Spawned))
        assert isinstance(first, SessionStarted), self.events
        return first

    def notices(self) -> list[str]:
        return [e.message for e in self.events if isinstance(e, RunNotice)]


def text_of(events: list[AgentEvent]) -> str:
    return "".join(e.text for e in events if isinstance(e, TextDelta))


async def drive(adapter: Adapter, backend: Backend, spec: RunSpec) -> Run:
    """One run to its end; a RunFailed is returned, not raised (any other exception propagates).

    For a backend that leaves the deadline to the engine (jobs/engine/engine.py, whose clock is proven in
    tests/jobs/test_engine.py and tests/inmemory/test_deadlines.py), the mirrored clock starts once the upstream is up
    (its first SessionStarted or text): what such a backend shows here is that the text streamed before a hang is
    kept and the run stops when closed, and a Node boot a loaded machine makes slow is no part of that. `elapsed` is
    measured from that clock's start."""
    backend.check(spec)
    seen: list[AgentEvent] = []
    error: RunFailed | None = None
    started = time.monotonic()
    with anyio.fail_after(BOUND):
        try:
            with anyio.CancelScope() as scope:
                if adapter.enforces_deadline:
                    scope.deadline = started + spec.timeout_seconds + OWN_DEADLINE_SLACK
                async with aclosing(open_run(backend, spec)) as events:
                    async for event in events:
                        seen.append(event)
                        if not adapter.enforces_deadline and scope.deadline == math.inf and _upstream_up(event):
                            started = time.monotonic()
                            scope.deadline = started + spec.timeout_seconds
            if scope.cancelled_caught:  # what jobs/engine/engine.py does for such a backend
                raise RunTimedOut(backend.command, spec.timeout_seconds, partial_text=text_of(seen))
        except RunFailed as exc:
            if not exc.partial_text:  # as the engine does (jobs/engine/active.py): the run's record holds the text
                exc.partial_text = text_of(seen)
            error = exc
    return Run(seen, error, time.monotonic() - started)


def _upstream_up(event: AgentEvent) -> bool:
    return isinstance(event, SessionStarted | TextDelta)


async def answer(adapter: Adapter, backend: Backend, spec: RunSpec) -> Run:
    """A run that must succeed."""
    run = await drive(adapter, backend, spec)
    assert run.error is None, f"{adapter.name}: {type(run.error).__name__}: {run.error} ({run.error.reason})"
    return run


async def failure(adapter: Adapter, backend: Backend, spec: RunSpec) -> RunFailed:
    """A run that must fail."""
    run = await drive(adapter, backend, spec)
    assert run.error is not None, f"{adapter.name}: succeeded with {run.events}"
    return run.error
