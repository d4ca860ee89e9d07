"""ActiveRuns: the runs in flight in one process, each with its cancel scope, and the one place a run's end is
written into its record (done, failed, cancelled, with the partial text). The executor's engine and the server's
follower (jobs/follower.py) both run through it, so a run ends the same way whichever side stops it.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import anyio

from gemini_relay.core.result import RunResult
from gemini_relay.core.vocabulary import RunState
from gemini_relay.errors import BackendUnavailable, RunCancelled, RunFailed
from gemini_relay.jobs.engine.record import RunRecord
from gemini_relay.jobs.engine.runners import receipt_of
from gemini_relay.log import logger


@dataclass
class _Active:
    record: RunRecord
    scope: anyio.CancelScope
    cancel_message: str | None = None


class ActiveRuns:
    def __init__(self) -> None:
        self._active: dict[str, _Active] = {}

    @property
    def records(self) -> list[RunRecord]:
        return [a.record for a in self._active.values()]

    async def run(self, record: RunRecord, body: Callable[[], Awaitable[RunResult]]) -> RunResult:
        """Run `body` for `record` to a terminal state, cancellable by `cancel(record.run_id)`.

        Raises:
            RunTimedOut, RunCancelled, RunFailed: the run did not succeed; partial text is attached.
            BackendUnavailable: the backend could not start at all.
        """
        active = _Active(record, anyio.CancelScope())
        self._active[record.run_id] = active
        try:
            with active.scope:
                outcome = await body()
            if active.scope.cancelled_caught:
                raise RunCancelled(
                    active.cancel_message or f"{record.spec.tool} was cancelled", partial_text=record.text
                )
            record.state = RunState.DONE
        except RunFailed as exc:
            if not exc.partial_text:
                exc.partial_text = record.text
            if exc.receipt is None and record.text.strip():  # it answered in part: that run is what the part shows
                exc.receipt = receipt_of(record, failure=exc)
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
            record.ended_at = time.monotonic()
            del self._active[record.run_id]
            logger.info(
                "Run %s on %s ended %s after %.1fs", record.run_id, record.backend, record.state, record.elapsed
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
            if self.cancel(active.record.run_id, f"{active.record.spec.tool} {message_for}"):
                count += 1
        return count
