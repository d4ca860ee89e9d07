"""Pacer: the minimum gap between starts, jitter, and the queue wait limit (injected clock and random source).

A fake clock advances only when the pacer sleeps, so gaps are checked exactly; the slot wait uses a real anyio
semaphore held by another task, and every wait is bounded with fail_after.
"""

from __future__ import annotations

from collections.abc import Iterator

import anyio
import pytest

from gemini_relay.core.pacing import PacingPolicy
from gemini_relay.errors import RunFailed
from gemini_relay.jobs.engine.pacer import Pacer, QueueWaitExceeded

pytestmark = pytest.mark.anyio
BOUND = 5.0


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds
        await anyio.lowlevel.checkpoint()


def randoms(*values: float) -> Iterator[float]:
    yield from values


def pacer(policy: PacingPolicy, clock: FakeClock, *rand: float) -> Pacer:
    values = randoms(*rand) if rand else None
    return Pacer(policy, clock=clock, sleep=clock.sleep, rand=(lambda: next(values)) if values else (lambda: 0.0))


async def test_the_first_start_is_immediate_without_jitter() -> None:
    clock = FakeClock()
    async with pacer(PacingPolicy(min_gap=5), clock).admit() as admission:
        assert admission.waited == 0 and admission.started_at == 0
    assert clock.sleeps == []


async def test_starts_are_spaced_by_the_minimum_gap_measured_from_the_previous_start() -> None:
    clock = FakeClock()
    paced = pacer(PacingPolicy(min_gap=5), clock)
    starts = []
    for _ in range(3):
        async with paced.admit() as admission:
            starts.append(admission.started_at)
            clock.now += 1  # the run itself takes a second
    assert starts == [0, 5, 10]


async def test_a_start_after_the_gap_has_passed_does_not_wait() -> None:
    clock = FakeClock()
    paced = pacer(PacingPolicy(min_gap=2), clock)
    async with paced.admit():
        pass
    clock.now = 30
    async with paced.admit() as admission:
        assert admission.started_at == 30 and admission.waited == 0


async def test_jitter_delays_each_start_by_a_random_share_of_its_maximum() -> None:
    clock = FakeClock()
    paced = pacer(PacingPolicy(jitter=0.2), clock, 0.5, 1.0)
    async with paced.admit() as first:
        pass
    async with paced.admit() as second:
        pass
    assert first.started_at == pytest.approx(0.1) and second.started_at == pytest.approx(0.3)
    assert clock.sleeps == pytest.approx([0.1, 0.2])


async def test_the_gap_counts_from_the_jittered_start() -> None:
    clock = FakeClock()
    paced = pacer(PacingPolicy(min_gap=1, jitter=1), clock, 0.5, 0.0)
    async with paced.admit() as first:
        pass
    async with paced.admit() as second:
        pass
    assert second.started_at - first.started_at == pytest.approx(1.0)


async def test_concurrent_callers_get_distinct_ordered_start_times() -> None:
    clock = FakeClock()
    paced = pacer(PacingPolicy(min_gap=3), clock)
    starts: list[float] = []

    async def one() -> None:
        async with paced.admit() as admission:
            starts.append(admission.started_at)

    with anyio.fail_after(BOUND):
        async with anyio.create_task_group() as tg:
            for _ in range(4):
                tg.start_soon(one)
    assert sorted(starts) == [0, 3, 6, 9]


async def test_a_gap_beyond_the_queue_wait_fails_at_once_and_frees_the_slot() -> None:
    clock = FakeClock()
    paced = pacer(PacingPolicy(min_gap=60, max_wait=10), clock)
    slot = anyio.Semaphore(1)
    async with paced.admit(slot, tool="gemini-review"):
        pass
    with pytest.raises(QueueWaitExceeded) as caught:
        async with paced.admit(slot, tool="gemini-review"):
            pytest.fail("must not start")
    error = caught.value
    assert isinstance(error, RunFailed) and error.retryable is True
    assert error.message.startswith("gemini-review could not start within 10s: the minimum gap between starts")
    assert "GEMINI_RELAY_QUEUE_WAIT" in (error.recovery or "")
    assert slot.value == 1 and paced.waiting == 0 and clock.sleeps == []


async def hold(paced: Pacer, slot: anyio.Semaphore, held: anyio.Event, release: anyio.Event, order: list[str]) -> None:
    """Take `slot` through the pacer, say so on `held` and keep it until `release`; noted in `order` as it ends."""
    async with paced.admit(slot):
        held.set()
        await release.wait()
        order.append("holder done")


async def test_waiting_for_a_busy_slot_past_the_limit_fails_with_a_clear_error() -> None:
    paced = Pacer(PacingPolicy(max_wait=0.05), backend="agy")
    slot = anyio.Semaphore(1)
    held = anyio.Event()
    release = anyio.Event()

    with anyio.fail_after(BOUND):
        async with anyio.create_task_group() as tg:
            tg.start_soon(hold, paced, slot, held, release, [])
            await held.wait()
            with pytest.raises(QueueWaitExceeded, match="every agy slot stayed busy"):
                async with paced.admit(slot, tool="gemini-ask"):
                    pytest.fail("must not start")
            release.set()
    assert paced.waiting == 0 and slot.value == 1


async def test_without_a_limit_a_waiter_starts_when_the_slot_frees() -> None:
    paced = Pacer(PacingPolicy())
    slot = anyio.Semaphore(1)
    order: list[str] = []
    held = anyio.Event()
    release = anyio.Event()

    async def waiter() -> None:
        async with paced.admit(slot):
            order.append("waiter started")

    with anyio.fail_after(BOUND):
        async with anyio.create_task_group() as tg:
            tg.start_soon(hold, paced, slot, held, release, order)
            await held.wait()
            tg.start_soon(waiter)
            await anyio.wait_all_tasks_blocked()
            assert paced.waiting == 1
            release.set()
    assert order == ["holder done", "waiter started"]


async def test_a_cancelled_waiter_leaves_no_trace() -> None:
    paced = Pacer(PacingPolicy())
    slot = anyio.Semaphore(1)
    with anyio.fail_after(BOUND):
        async with slot:
            with anyio.move_on_after(0.01):
                async with paced.admit(slot):
                    pytest.fail("must not start")
    assert paced.waiting == 0 and slot.value == 1


@pytest.mark.parametrize(
    "policy", [{"min_gap": -1}, {"jitter": float("nan")}, {"max_wait": 0}, {"max_wait": float("inf")}]
)
def test_a_policy_with_impossible_values_is_refused(policy: dict[str, float]) -> None:
    with pytest.raises(ValueError, match="must be a finite number"):
        PacingPolicy(**policy)


async def test_starts_now_says_whether_admit_would_start_a_call_without_waiting() -> None:
    clock = FakeClock()
    gapped = pacer(PacingPolicy(min_gap=5), clock)
    assert gapped.starts_now(gate_free=True) and not gapped.starts_now(gate_free=False)
    async with gapped.admit():
        pass
    assert not gapped.starts_now(gate_free=True)  # the next start is 5 s away
    clock.now = 5
    assert gapped.starts_now(gate_free=True)
    assert not pacer(PacingPolicy(jitter=0.5), clock).starts_now(gate_free=True)  # a jitter is drawn: it may wait
    slot = anyio.Semaphore(1)
    queued = pacer(PacingPolicy(), clock)
    with anyio.fail_after(BOUND):
        async with anyio.create_task_group() as tg, slot:
            tg.start_soon(_enter_once, queued, slot)
            while not queued.waiting:
                await anyio.lowlevel.checkpoint()
            assert not queued.starts_now(gate_free=True)  # another call waits ahead of it (FIFO)


async def _enter_once(paced: Pacer, gate: anyio.Semaphore) -> None:
    async with paced.admit(gate):
        pass
