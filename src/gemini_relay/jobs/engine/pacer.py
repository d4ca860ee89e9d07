"""Pacing of CLI starts: a minimum gap between starts, a random jitter before each, and a bounded queue wait.

Bursts of CLI starts trip upstream rate limits (several processes authenticating and calling the API in the same
second), so starts can be spread out. A call that cannot start within the queue wait limit fails with a clear,
retryable error instead of holding its client open indefinitely.

One Pacer per backend. `admit()` wraps the start of one run:

    async with pacer.admit(limiter, tool="gemini-ask"):
        ...start the run...

It waits for `gate` (the backend's concurrency limiter), then for the next free start time (the last start plus
`min_gap`), then a uniform random jitter in [0, jitter]; the whole wait is bounded by `max_wait`. The clock, sleep
and random source are injectable for tests.
"""

from __future__ import annotations

import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from typing import Any

import anyio

from gemini_relay.core.pacing import PacingPolicy
from gemini_relay.core.vocabulary import FailureReason
from gemini_relay.errors import RunFailed

__all__ = ["Admission", "PacingPolicy", "Pacer", "QueueWaitExceeded"]


@dataclass(frozen=True)
class Admission:
    """How long the caller waited in all (slot + gap + jitter) and the start time it was given (pacer clock)."""

    waited: float
    started_at: float


class QueueWaitExceeded(RunFailed):
    """A run could not start within the queue wait limit; nothing was spawned, so retrying is safe."""

    def __init__(self, tool: str, backend: str, limit: float, reason: str) -> None:
        super().__init__(
            f"{tool} could not start within {_seconds(limit)}s: {reason}",
            reason=FailureReason.BACKEND_ERROR,
            retryable=True,
            recovery=(
                "Nothing was sent to the model. Retry when the running calls have finished (gemini-cancel stops "
                f"them), or raise GEMINI_RELAY_QUEUE_WAIT / GEMINI_RELAY_MAX_CONCURRENT for the {backend} backend."
            ),
        )
        self.limit = limit


class Pacer:
    def __init__(
        self,
        policy: PacingPolicy,
        *,
        backend: str = "gemini",
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[Any]] = anyio.sleep,
        rand: Callable[[], float] = random.random,
    ) -> None:
        self.policy = policy
        self._backend = backend
        self._clock = clock
        self._sleep = sleep
        self._rand = rand
        self._next_start: float | None = None  # the earliest time the next start may happen
        self.waiting = 0  # calls inside admit() that have not started yet (for messages and diagnostics)

    @asynccontextmanager
    async def admit(
        self, gate: AbstractAsyncContextManager[Any] | None = None, *, tool: str = "the call"
    ) -> AsyncIterator[Admission]:
        """Hold `gate` for the body; raise QueueWaitExceeded when the start would come later than `max_wait`."""
        entered = self._clock()
        self.waiting += 1
        started = False
        try:
            async with AsyncExitStack() as stack:
                if gate is not None:
                    await self._enter(stack, gate, tool)
                start_at = self._reserve(entered, tool)
                delay = start_at - self._clock()
                if delay > 0:
                    await self._sleep(delay)
                self.waiting -= 1
                started = True
                yield Admission(waited=self._clock() - entered, started_at=start_at)
        finally:
            if not started:
                self.waiting -= 1

    def starts_now(self, gate_free: bool) -> bool:
        """Whether admit() would start a call at once (`gate_free`: its gate has a free slot): nobody waits ahead of
        it, no gap is pending and no jitter is drawn."""
        pending = self._next_start is not None and self._next_start > self._clock()
        return gate_free and not self.waiting and not pending and self.policy.jitter <= 0

    async def _enter(self, stack: AsyncExitStack, gate: AbstractAsyncContextManager[Any], tool: str) -> None:
        # The slot wait is bounded in real time: the gate is a real anyio primitive released by other tasks.
        limit = self.policy.max_wait
        with anyio.move_on_after(limit) as scope:
            await stack.enter_async_context(gate)
        if scope.cancelled_caught and limit is not None:
            others = self.waiting - 1
            raise QueueWaitExceeded(
                tool, self._backend, limit, f"every {self._backend} slot stayed busy ({others} other call(s) waiting)"
            )

    def _reserve(self, entered: float, tool: str) -> float:
        """Claim a start time synchronously, so concurrent callers get distinct, ordered times."""
        now = self._clock()
        slot = now if self._next_start is None else max(now, self._next_start)
        start = slot + self.policy.jitter * self._rand()
        limit = self.policy.max_wait
        if limit is not None and start - entered > limit:
            raise QueueWaitExceeded(
                tool,
                self._backend,
                limit,
                f"the minimum gap between starts (GEMINI_RELAY_MIN_GAP_MS) puts the next free start "
                f"{_seconds(start - now)}s away",
            )
        if self.policy.min_gap > 0:
            # Measured from the jittered start, so the gap between two real starts is never below min_gap.
            self._next_start = start + self.policy.min_gap
        return start


def _seconds(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:.1f}"
