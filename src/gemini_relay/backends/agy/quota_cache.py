"""The quota readings of one server process: a cache with `max_age`, one probe in flight shared by every caller (the
background refresh included), failures remembered 30 s, and probing off for good once agy spent a model turn on it.

Nothing is persisted: a restarted server starts empty, and every reader fails open until the first probe.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import replace

import anyio

from gemini_relay.backends.agy.usage import UsageReading
from gemini_relay.log import logger

CACHE_SECONDS = 60.0  # max_age when a caller names none: quota moves slowly
MIN_MAX_AGE = 10.0  # a shorter max_age is raised to this, so a loop of calls cannot spawn agy back to back
FAILURE_CACHE_SECONDS = 30.0  # a failing probe is not retried on every call
TRUST_FLOOR = 600.0  # the `quota` field and the priority guard read a reading younger than max(2 × interval, this)

Probe = Callable[[], Awaitable[UsageReading]]


class _Flight:
    """One probe under way; whoever asks meanwhile waits for it instead of starting another."""

    def __init__(self) -> None:
        self.done = anyio.Event()
        self.reading: UsageReading | None = None  # None after `done`: its caller was cancelled before agy answered


class UsageCache:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._good: UsageReading | None = None
        self._failure: UsageReading | None = None
        self._disabled: UsageReading | None = None
        self._flight: _Flight | None = None

    def trusted(self, window: float) -> UsageReading | None:
        """The last good reading while it is younger than `window` seconds; never probes (a later failed probe
        does not hide it: what was read inside the window still applies)."""
        good = self._good
        return good if good is not None and self._clock() - good.taken_at < window else None

    async def read(self, probe: Probe, max_age: float = CACHE_SECONDS) -> UsageReading:
        """A reading younger than `max_age` (at least MIN_MAX_AGE), else a failure younger than 30 s, else a new
        probe — the one already in flight when there is one."""
        max_age = max(max_age, MIN_MAX_AGE)
        while True:
            if self._disabled is not None:
                return self._disabled
            now = self._clock()
            good, failure = self._good, self._failure
            if good is not None and now - good.taken_at < max_age:
                return good
            if failure is not None and now - failure.taken_at < FAILURE_CACHE_SECONDS:
                return failure
            flight = self._flight
            if flight is None:
                return await self._lead(probe)
            await flight.done.wait()
            if flight.reading is not None:
                return flight.reading
            # Its caller was cancelled before agy answered: the next round starts a probe of its own.

    async def refresh(self, probe: Probe, interval: float) -> None:
        """Read every `interval` seconds until cancelled (the server stopping) or until probing is off for good.
        It goes through `read`, so it joins a probe in flight and reuses a reading a caller just took."""
        while self._disabled is None:
            reading = await self.read(probe, max_age=interval)
            if not reading.ok:
                logger.info("Background quota refresh: %s", reading.error)
            await anyio.sleep(interval)

    async def _lead(self, probe: Probe) -> UsageReading:
        flight = self._flight = _Flight()
        try:
            reading = replace(await probe(), taken_at=self._clock())
            if reading.disables:
                self._disabled = reading
            elif reading.ok:
                self._good, self._failure = reading, None
            else:
                self._failure = reading
            flight.reading = reading
            return reading
        finally:
            self._flight = None
            flight.done.set()
