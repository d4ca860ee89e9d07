"""RunResult: the one value a finished run is, with the one JSON codec used by the store, the supervisor, status and
the tools. A failure keeps its kind (failed, timed out, cancelled) and its data across every process boundary.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from enum import StrEnum
from typing import Any

from gemini_relay.core.events import Usage
from gemini_relay.core.receipt import Receipt
from gemini_relay.core.vocabulary import FailureReason, RunState
from gemini_relay.errors import RunCancelled, RunFailed, RunTimedOut


class FailureKind(StrEnum):
    """Which exception a failure is raised as again on the other side of a process boundary."""

    FAILED = "failed"
    TIMED_OUT = "timed_out"
    CANCELLED = "cancelled"


# What a failure carries of its exception, the same in both directions (the kind, message and reason travel by
# construction): one list, so a field added to RunFailed is added to the crossing once.
_CARRIED = ("recovery", "retryable", "error_id", "http_status")


@dataclass(frozen=True)
class Failure:
    kind: FailureKind
    message: str
    reason: FailureReason | None = FailureReason.BACKEND_ERROR
    recovery: str | None = None
    retryable: bool | None = None
    error_id: str | None = None
    http_status: int | None = None
    timeout_seconds: float | None = None

    @classmethod
    def from_error(cls, exc: RunFailed) -> Failure:
        kind = FailureKind.FAILED
        seconds = None
        if isinstance(exc, RunCancelled):
            kind = FailureKind.CANCELLED
        elif isinstance(exc, RunTimedOut):
            kind, seconds = FailureKind.TIMED_OUT, exc.seconds
        carried = {name: getattr(exc, name) for name in _CARRIED}
        return cls(kind=kind, message=exc.message, reason=exc.reason, timeout_seconds=seconds, **carried)

    def to_error(self, partial_text: str = "") -> RunFailed:
        """The exception this failure was, rebuilt with the same type and data."""
        error: RunFailed
        if self.kind is FailureKind.CANCELLED:
            error = RunCancelled(self.message, partial_text=partial_text)
        elif self.kind is FailureKind.TIMED_OUT:
            error = RunTimedOut("", self.timeout_seconds or 0.0, partial_text=partial_text, message=self.message)
        else:
            error = RunFailed(self.message, reason=self.reason, partial_text=partial_text)
        for name in _CARRIED:
            setattr(error, name, getattr(self, name))
        return error


@dataclass(frozen=True)
class RunResult:
    """A terminal run: its answer (possibly partial) and, unless it is done, why not."""

    state: RunState  # DONE | FAILED | CANCELLED
    text: str = ""
    partial: bool = False
    conversation_id: str | None = None
    model: str | None = None
    usage: Usage | None = None
    num_turns: int | None = None
    notices: tuple[str, ...] = ()
    status: str = "SUCCESS"
    structured_output: Any = None
    has_structured_output: bool = False
    failure: Failure | None = None
    files: tuple[str, ...] = ()  # absolute paths of the files the run wrote (media generations)
    receipt: Receipt | None = None  # what the run was (core/receipt.py); None for a run that never got an answer

    @classmethod
    def from_error(
        cls,
        exc: RunFailed,
        *,
        text: str | None = None,
        conversation_id: str | None = None,
        model: str | None = None,
        notices: tuple[str, ...] = (),
        receipt: Receipt | None = None,
    ) -> RunResult:
        failure = Failure.from_error(exc)
        return cls(
            state=RunState.CANCELLED if failure.kind is FailureKind.CANCELLED else RunState.FAILED,
            text=exc.partial_text if text is None else text,
            partial=True,
            conversation_id=conversation_id,
            model=model,
            notices=notices,
            status="CANCELLED" if failure.kind is FailureKind.CANCELLED else "ERROR",
            failure=failure,
            receipt=exc.receipt if receipt is None else receipt,
        )

    def raise_for_failure(self) -> RunResult:
        """Self when the run is done; otherwise its failure, raised as the exception it was."""
        if self.state is RunState.DONE:
            return self
        failure = self.failure or Failure(FailureKind.FAILED, "the run failed", reason=FailureReason.UNKNOWN)
        error = failure.to_error(self.text)
        error.receipt = self.receipt
        raise error

    # --- the codec: flat JSON, the field names gemini-status shows -------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        failure = self.failure
        return {
            "state": self.state.value,
            "text": self.text,
            "partial": self.partial,
            "conversation_id": self.conversation_id,
            "model": self.model,
            "usage": asdict(self.usage) if self.usage else None,
            "num_turns": self.num_turns,
            "notices": list(self.notices),
            "status": self.status,
            "structured_output": self.structured_output,
            "has_structured_output": self.has_structured_output,
            "files": list(self.files),
            "receipt": self.receipt.to_json() if self.receipt else None,
            "failure_kind": failure.kind.value if failure else None,
            "error": failure.message if failure else None,
            "failure_reason": failure.reason.value if failure and failure.reason else None,
            "recovery": failure.recovery if failure else None,
            "retryable": failure.retryable if failure else None,
            "error_id": failure.error_id if failure else None,
            "http_status": failure.http_status if failure else None,
            "timeout_seconds": failure.timeout_seconds if failure else None,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RunResult:
        state = RunState(data["state"])
        failure = None
        if state is not RunState.DONE:
            default_kind = FailureKind.CANCELLED if state is RunState.CANCELLED else FailureKind.FAILED
            reason = data.get("failure_reason")
            failure = Failure(
                kind=_kind(data.get("failure_kind"), default_kind),
                message=data.get("error") or ("cancelled" if state is RunState.CANCELLED else "the run failed"),
                reason=_reason(reason) if reason else (None if state is RunState.CANCELLED else FailureReason.UNKNOWN),
                recovery=data.get("recovery"),
                retryable=data.get("retryable"),
                error_id=data.get("error_id"),
                http_status=data.get("http_status"),
                timeout_seconds=data.get("timeout_seconds"),
            )
        usage = data.get("usage")
        receipt = data.get("receipt")
        return cls(
            state=state,
            text=data.get("text") or "",
            partial=bool(data.get("partial", False)),
            conversation_id=data.get("conversation_id"),
            model=data.get("model"),
            usage=Usage(**usage) if isinstance(usage, dict) else None,
            num_turns=data.get("num_turns"),
            notices=tuple(data.get("notices") or ()),
            status=data.get("status") or ("SUCCESS" if state is RunState.DONE else "ERROR"),
            structured_output=data.get("structured_output"),
            has_structured_output=bool(data.get("has_structured_output", False)),
            failure=failure,
            files=tuple(str(f) for f in data.get("files") or ()),
            receipt=Receipt.from_json(receipt) if isinstance(receipt, dict) else None,
        )


def _reason(value: str) -> FailureReason:
    try:
        return FailureReason(value)
    except ValueError:  # the set is closed: anything unrecognised is UNKNOWN
        return FailureReason.UNKNOWN


def _kind(value: Any, default: FailureKind) -> FailureKind:
    try:
        return FailureKind(value) if value else default
    except ValueError:
        return default
