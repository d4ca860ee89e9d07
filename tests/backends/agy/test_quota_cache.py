"""The quota cache of one server: max_age, one shared probe in flight, failures remembered, the trusted window, and
the bounded background refresh (seed 001's Quota section). The probe here is a coroutine the test scripts, and the
clock one it moves, so nothing waits for real time."""

from __future__ import annotations

import anyio
import pytest

from gemini_relay.backends.agy.quota_cache import FAILURE_CACHE_SECONDS, UsageCache
from gemini_relay.backends.agy.usage import QuotaGroup, UsageReading
from tests.backends.agy.conftest import Clock

pytestmark = pytest.mark.anyio
BOUND = 10.0


class ScriptedProbe:
    """Counts its calls; each call waits for `gate` (a probe in flight: `held`), saying so through `started`."""

    def __init__(self, *readings: UsageReading, held: bool = False) -> None:
        self.readings = list(readings)
        self.calls = 0
        self.gate = anyio.Event()
        if not held:
            self.gate.set()
        self.started = anyio.Event()

    async def __call__(self) -> UsageReading:
        self.calls += 1
        self.started.set()
        await self.gate.wait()
        return self.readings.pop(0) if self.readings else good()


def held() -> tuple[ScriptedProbe, UsageCache]:
    """A probe that stays in flight until the test sets its gate, and an empty cache."""
    return ScriptedProbe(held=True), UsageCache(Clock())


def good(name: str = "Gemini Models") -> UsageReading:
    return UsageReading(groups=(QuotaGroup(name, "", ()),))


async def test_a_reading_younger_than_max_age_is_reused_and_an_older_one_is_read_again() -> None:
    clock, probe = Clock(), ScriptedProbe(good("first"), good("second"))
    cache = UsageCache(clock)
    first = await cache.read(probe, max_age=60)
    clock.now += 59
    assert await cache.read(probe, max_age=60) is first and probe.calls == 1
    assert (await cache.read(probe, max_age=30)).groups[0].name == "second" and probe.calls == 2


async def test_a_max_age_under_ten_seconds_counts_as_ten() -> None:
    clock, probe = Clock(), ScriptedProbe()
    cache = UsageCache(clock)
    first = await cache.read(probe, max_age=1)
    clock.now += 9
    assert await cache.read(probe, max_age=0) is first and probe.calls == 1


async def test_concurrent_callers_share_one_probe_in_flight() -> None:
    probe, cache = held()
    got: list[UsageReading] = []

    async def read() -> None:
        got.append(await cache.read(probe, max_age=10))

    with anyio.fail_after(BOUND):
        async with anyio.create_task_group() as tg:
            for _ in range(3):
                tg.start_soon(read)
            await probe.started.wait()
            probe.gate.set()
    assert probe.calls == 1 and len(got) == 3 and got[0] is got[1] is got[2]


async def test_a_caller_cancelled_mid_probe_leaves_the_next_caller_a_probe_of_its_own() -> None:
    probe, cache = held()
    with anyio.fail_after(BOUND):
        async with anyio.create_task_group() as tg:
            tg.start_soon(cache.read, probe)
            await probe.started.wait()
            tg.cancel_scope.cancel()
        probe.gate.set()
        reading = await cache.read(probe)
    assert reading.ok and probe.calls == 2


async def test_a_failed_probe_is_remembered_for_30_seconds_without_hiding_the_trusted_reading() -> None:
    clock, probe = Clock(), ScriptedProbe(good(), UsageReading(error="signed out"))
    cache = UsageCache(clock)
    first = await cache.read(probe)
    clock.now += 61
    assert (await cache.read(probe)).error == "signed out"
    clock.now += FAILURE_CACHE_SECONDS - 1
    assert (await cache.read(probe)).error == "signed out" and probe.calls == 2
    assert cache.trusted(600) is first  # an earlier reading inside the window still applies
    clock.now += 600
    assert cache.trusted(600) is None  # too old to trust: readers fail open


async def test_a_probe_that_spent_a_model_turn_stops_probing_for_the_process() -> None:
    probe = ScriptedProbe(UsageReading(error="model turn", disables=True))
    cache = UsageCache(Clock())
    with anyio.fail_after(BOUND):
        first = await cache.read(probe)
        assert await cache.read(probe, max_age=0) is first
        await cache.refresh(probe, 60)  # returns at once: probing is off for good
    assert probe.calls == 1


async def test_the_background_refresh_reads_joins_a_probe_in_flight_and_stops_when_cancelled() -> None:
    probe, cache = held()
    with anyio.fail_after(BOUND):
        async with anyio.create_task_group() as tg:
            tg.start_soon(cache.refresh, probe, 60.0)
            await probe.started.wait()
            tg.start_soon(cache.read, probe)  # a caller while the refresh's probe is in flight joins it
            await anyio.wait_all_tasks_blocked()
            probe.gate.set()
            reading = await cache.read(probe)
            tg.cancel_scope.cancel()  # the server stopping
    assert reading.ok and probe.calls == 1 and cache.trusted(600) is reading
