"""The idle reaper both warm pools share (agy's live processes, the Gemini CLI's ACP processes).

It sleeps until the next process could expire or until the pool changes, whichever comes first, so an idle pool costs
no wakeups and a newly parked process is counted at once.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import NoReturn

import anyio


class IdleReaper:
    def __init__(self) -> None:
        self._changed = anyio.Event()

    def notify(self) -> None:
        """The pool changed (a process parked, finished or left): sweep again now."""
        self._changed.set()
        self._changed = anyio.Event()

    async def changed(self) -> None:
        """Wait for the next `notify` (a caller waiting for a slot to free up)."""
        await self._changed.wait()

    async def run(self, sweep: Callable[[float], float]) -> NoReturn:
        """Calls `sweep(now)` (monotonic), which stops what expired and returns the seconds until the next expiry."""
        while True:
            wait = sweep(time.monotonic())
            changed = self._changed
            with anyio.move_on_after(wait):
                await changed.wait()
