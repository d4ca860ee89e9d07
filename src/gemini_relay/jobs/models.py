"""What a run is: the request (RunSpec), its live record (RunRecord) and its result (RunOutcome)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from gemini_relay.core.events import (
    AgentEvent,
    Finished,
    SessionStarted,
    StreamNotice,
    TextDelta,
    ToolCall,
    ToolResult,
    Usage,
)
from gemini_relay.core.spec import RunSpec
from gemini_relay.core.vocabulary import BackendName, FailureReason, RunState

TAIL_CHARS = 150  # the progress keepalive quotes this much of the latest output

# Tool-result error types that mean "the agent tried and was not allowed".
_DENIED_TYPES = frozenset({"policy_violation", "tool_not_registered", "permission_denied", "denied"})


@dataclass
class RunRecord:
    """The live state of one run. One writer (the engine, fed by the backend's decoder); readers poll it."""

    spec: RunSpec
    backend: BackendName
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    state: RunState = RunState.QUEUED
    created_at: float = field(default_factory=time.monotonic)
    started_at: float | None = None
    ended_at: float | None = None
    session_id: str | None = None
    model: str | None = None
    pid: int | None = None
    notices: list[str] = field(default_factory=list[str])
    stream_errors: list[str] = field(default_factory=list[str])
    denied_actions: list[str] = field(default_factory=list[str])
    finished: Finished | None = None
    failure: FailureReason | None = None
    error: str | None = None
    reused_job: bool = False  # an idempotency key matched an existing job: run_id names that job
    partial: bool = False  # the backend says the text is incomplete even though the run counts as done
    listener: Callable[[AgentEvent], None] | None = field(default=None, repr=False)  # e.g. a job-store mirror
    _chunks: list[str] = field(default_factory=list[str])
    _tail: str = ""
    _tool_names: dict[str, str] = field(default_factory=dict[str, str])

    def apply(self, event: AgentEvent) -> None:
        """Fold one decoded event into the record."""
        match event:
            case SessionStarted(session_id=sid, model=model):
                self.session_id = sid or self.session_id
                self.model = model or self.model
            case TextDelta(text=text):
                self._chunks.append(text)
                self._tail = (self._tail + text)[-TAIL_CHARS:]
            case ToolCall(tool_id=tool_id, name=name):
                self._tool_names[tool_id] = name
            case ToolResult(tool_id=tool_id, ok=False, error_type=error_type) if error_type in _DENIED_TYPES:
                self.denied_actions.append(self._tool_names.get(tool_id, tool_id))
            case ToolResult():
                pass
            case StreamNotice(message=message, severity=severity):
                if severity == "error":
                    self.stream_errors.append(message)
            case Finished():
                self.finished = event
                if event.session_id:
                    self.session_id = event.session_id
                self.denied_actions.extend(a for a in event.denied_actions if a not in self.denied_actions)
        if self.listener is not None:
            self.listener(event)

    def note(self, notice: str) -> None:
        if notice not in self.notices:
            self.notices.append(notice)

    @property
    def streamed_text(self) -> str:
        return "".join(self._chunks)

    @property
    def text(self) -> str:
        """The answer: the upstream's own full text when it sent one, else the streamed deltas."""
        if self.finished is not None and self.finished.text is not None:
            return self.finished.text
        return self.streamed_text

    @property
    def tail(self) -> str:
        return self._tail

    @property
    def elapsed(self) -> float:
        start = self.started_at or self.created_at
        return (self.ended_at or time.monotonic()) - start


@dataclass(frozen=True)
class RunOutcome:
    """A successful run, as the tools format it."""

    run_id: str
    text: str
    conversation_id: str | None
    model: str | None
    usage: Usage | None
    notices: tuple[str, ...]
    status: str
    num_turns: int | None = None
    structured_output: Any = None
    has_structured_output: bool = False
    partial: bool = False
