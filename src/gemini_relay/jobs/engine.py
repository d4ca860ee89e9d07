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
from gemini_relay.errors import BackendUnavailable, RunCancelled, RunFailed, RunTimedOut
from gemini_relay.jobs.models import RunOutcome, RunRecord, RunSpec
from gemini_relay.jobs.vocabulary import BackendName, RunState
from gemini_relay.log import logger


@dataclass
class _Active:
    record: RunRecord
    scope: anyio.CancelScope
    cancel_message: str | None = None


class RunEngine:
    def __init__(self, backends: Mapping[BackendName, Backend], *, max_concurrent: int) -> None:
        self._backends = dict(backends)
        self._limiters = {
            name: anyio.Semaphore(backend.max_concurrent or max_concurrent, fast_acquire=False)
            for name, backend in self._backends.items()
        }
        self._active: dict[str, _Active] = {}

    def backend(self, name: BackendName) -> Backend:
        return self._backends[name]

    def new_record(self, spec: RunSpec, backend: BackendName) -> RunRecord:
        if backend not in self._backends:
            raise BackendUnavailable(f"The {backend.value} backend is not available in this server")
        return RunRecord(spec=spec, backend=backend)

    @property
    def active(self) -> list[RunRecord]:
        return [a.record for a in self._active.values()]

    async def execute(self, record: RunRecord) -> RunOutcome:
        """Run `record` to a terminal state.

        Raises:
            RunTimedOut, RunCancelled, RunFailed: the run did not succeed; partial text is attached.
            BackendUnavailable: the backend could not start at all.
        """
        backend = self._backends[record.backend]
        active = _Active(record, anyio.CancelScope())
        self._active[record.run_id] = active
        try:
            with active.scope:
                async with self._limiters[record.backend]:
                    record.state = RunState.STARTING
                    record.started_at = time.monotonic()
                    timeout = record.spec.timeout_seconds
                    with anyio.move_on_after(timeout) as deadline:
                        await backend.run(record)
                    if deadline.cancelled_caught:
                        raise RunTimedOut(backend.command, timeout, partial_text=record.text)
            if active.scope.cancelled_caught:
                raise RunCancelled(
                    active.cancel_message or f"{record.spec.tool} was cancelled", partial_text=record.text
                )
            _note_run_findings(record)
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
            record.ended_at = time.monotonic()
            del self._active[record.run_id]
            logger.info(
                "Run %s on %s ended %s after %.1fs", record.run_id, record.backend.value, record.state, record.elapsed
            )
        finished = record.finished
        return RunOutcome(
            run_id=record.run_id,
            text=record.text,
            conversation_id=record.session_id,
            model=record.model,
            usage=finished.usage if finished else None,
            notices=tuple(record.notices),
            status=finished.status if finished else "SUCCESS",
            num_turns=finished.num_turns if finished else None,
            structured_output=finished.structured_output if finished else None,
            has_structured_output=finished.has_structured_output if finished else False,
            partial=record.partial,
        )

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


def _note_run_findings(record: RunRecord) -> None:
    """What a successful run still needs to tell the caller: refused tool actions, a non-SUCCESS status."""
    if record.denied_actions:
        record.note(f"The agent was refused these tool action(s): {', '.join(dict.fromkeys(record.denied_actions))}")
    finished = record.finished
    if finished is not None and finished.status not in ("SUCCESS", ""):
        record.note(f"The run finished with status {finished.status}.")
