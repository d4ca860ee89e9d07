"""How the engine gets a run done: in this process (InlineRunner), or in the relay host (relay_host/executor.py)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import anyio

from gemini_relay.backends.base import Backend
from gemini_relay.backends.model_names import served_model, served_notice
from gemini_relay.core.receipt import Receipt
from gemini_relay.core.result import RunResult
from gemini_relay.core.vocabulary import FailureReason, RunState
from gemini_relay.errors import RunCancelled, RunFailed, RunTimedOut
from gemini_relay.jobs.engine.record import RunRecord


@dataclass(frozen=True)
class JobOptions:
    """Per-job choices that are not part of the upstream request."""

    priority: str = "normal"
    idempotency_key: str | None = None


class Runner(Protocol):
    #: Extra seconds the engine waits past the run's own deadline (a supervisor enforces the deadline itself).
    deadline_margin: float

    def create(self, record: RunRecord, options: JobOptions) -> RunRecord:
        """Register the run (a durable runner persists it); may return an existing job's record instead."""
        ...

    def detach(self) -> None:
        """The server is shutting down: runs that can outlive it should be left running."""
        ...

    def abandon(self, record: RunRecord) -> None:
        """The run never started (refused or cancelled in the queue): record that, unless detaching."""
        ...

    async def run(self, record: RunRecord, backend: Backend) -> RunResult:
        """Run to success and return the outcome, or raise RunFailed / BackendUnavailable. Cancel to stop it."""
        ...


@runtime_checkable
class AsyncCreating(Protocol):
    """A runner whose create is a round trip it can await (the relay host's): no worker thread per call."""

    async def acreate(self, record: RunRecord, options: JobOptions) -> RunRecord: ...


@runtime_checkable
class QueueAware(Protocol):
    """A runner told when a run must wait for its turn (the relay host writes such a job as queued then; one that
    starts at once is written once it is underway)."""

    def queueing(self, record: RunRecord) -> None: ...


class InlineRunner:
    """The backend runs in this process; the engine's deadline and cancel scope stop it."""

    deadline_margin = 0.0

    def create(self, record: RunRecord, options: JobOptions) -> RunRecord:
        return record

    def detach(self) -> None:
        """Inline runs die with the server; cancellation stops their process groups."""

    def abandon(self, record: RunRecord) -> None:
        """Nothing was persisted, so nothing is left behind."""

    async def run(self, record: RunRecord, backend: Backend) -> RunResult:
        await consume(backend, record)
        return outcome_from_record(record)


async def consume(backend: Backend, record: RunRecord) -> None:
    """Fold every event of the backend's run into the record (the one writer), closing the stream on any exit."""
    events = backend.run(record.spec)
    try:
        async for event in events:
            record.apply(event)
    finally:
        with anyio.CancelScope(shield=True):  # its cleanup (the process group stop) runs now, in this task
            await events.aclose()
    if record.finished is None:
        raise RunFailed(f"{backend.command} ended without a final result", reason=FailureReason.BACKEND_ERROR)


def outcome_from_record(record: RunRecord, job_id: str | None = None) -> RunResult:
    """The result of a run whose backend finished, with every upstream signal turned into a notice (or a failure),
    and its receipt (`job_id`: the stored job the run is).

    Raises:
        RunFailed: the answer is empty: never a success without the upstream's words (the errors it reported on the
            way, when it did, are the failure's message).
    """
    _note_run_findings(record)
    finished = record.finished
    return RunResult(
        receipt=receipt_of(record, job_id),
        state=RunState.DONE,
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
        files=finished.files if finished else (),
    )


def _note_run_findings(record: RunRecord) -> None:
    """What a finished run still needs to tell the caller: refused tool actions, a non-SUCCESS status, every
    warning or error the upstream sent on the side, and an empty answer — never a silent success."""
    if record.denied_actions:
        record.note(f"The agent was refused these tool action(s): {', '.join(dict.fromkeys(record.denied_actions))}")
    finished = record.finished
    if finished is not None and finished.status not in ("SUCCESS", ""):
        record.note(f"The run finished with status {finished.status}.")
    answered = finished is not None and (finished.has_structured_output or bool(finished.files))
    empty = not record.text.strip() and not answered
    if empty and record.stream_errors:
        raise RunFailed(
            f"{record.backend} finished without an answer after reporting: {'; '.join(record.stream_errors)}",
            reason=FailureReason.BACKEND_ERROR,
        )
    if empty:  # a success with no words would let the caller answer in the upstream's name
        said = [*record.stream_warnings, *record.notices]
        raise RunFailed(
            f"{record.backend} finished without any answer text"
            + (f" (it said: {'; '.join(dict.fromkeys(said))})" if said else ""),
            reason=FailureReason.BACKEND_ERROR,
            recovery="Nothing came back to relay: retry, or rephrase the request.",
        )
    for message in record.stream_errors:
        record.note(f"The upstream reported an error during the run: {message}")
    for message in record.stream_warnings:
        record.note(f"The upstream warned: {message}")


def receipt_of(record: RunRecord, job_id: str | None = None, failure: RunFailed | None = None) -> Receipt:
    """The run's receipt as it ends: served model (the upstream's witnesses), warm or cold, timings, tokens. With
    `failure`, of a run that answered in part before it failed: partial, and finished as the failure (TIMEOUT,
    CANCELLED or ERROR), not as the upstream never said."""
    finished = record.finished
    asked = record.model or record.spec.model  # as the run resolved it (an alias becomes its id)
    witnesses = finished.models if finished else ()
    differs = served_notice(record.backend, asked, witnesses) is not None  # the fallback the upstream did not say
    now = time.monotonic()
    admitted = record.started_at or record.created_at
    return Receipt(
        backend=record.backend,
        run_id=record.run_id,
        job_id=job_id,
        model=served_model(asked, witnesses),
        requested_model=(record.spec.model or asked) if differs else None,
        effort=record.spec.effort,
        conversation_id=record.session_id,
        finish_reason=_failed_as(failure) if failure else (finished.status if finished else "") or "SUCCESS",
        partial=record.partial or failure is not None,
        warm=record.warm,
        queued_seconds=max(admitted - record.created_at, 0.0),
        first_byte_seconds=None if record.first_output_at is None else max(record.first_output_at - admitted, 0.0),
        total_seconds=now - record.created_at,
        tokens=finished.usage if finished else None,
    )


def _failed_as(failure: RunFailed) -> str:
    if isinstance(failure, RunCancelled):
        return "CANCELLED"
    return "TIMEOUT" if isinstance(failure, RunTimedOut) else "ERROR"
