"""Transcript: the one fold of a run's decoded events — answer text, the upstream's verdict, its complaints.

The job's record (jobs/engine/record.py) wraps one and adds the run's lifecycle; a backend keeps its own copy of what it
yielded so it can classify the process's exit. Both fold through `apply`, so the two can never disagree.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gemini_relay.core.events import (
    AgentEvent,
    Finished,
    RunNotice,
    SessionStarted,
    Spawned,
    StepChanged,
    StreamNotice,
    TextDelta,
    ToolCall,
    ToolResult,
)
from gemini_relay.core.spec import RunSpec

TAIL_CHARS = 150  # the progress keepalive quotes this much of the latest output

# Tool-result error types that mean "the agent tried and was not allowed".
_DENIED_TYPES = frozenset({"policy_violation", "tool_not_registered", "permission_denied", "denied"})


@dataclass
class Transcript:
    spec: RunSpec
    session_id: str | None = None
    model: str | None = None
    pid: int | None = None
    step_type: str | None = None  # the step the upstream is on (kept after the run: its last one)
    finished: Finished | None = None
    notices: list[str] = field(default_factory=list[str])
    stream_errors: list[str] = field(default_factory=list[str])
    stream_warnings: list[str] = field(default_factory=list[str])
    denied_actions: list[str] = field(default_factory=list[str])
    _chunks: list[str] = field(default_factory=list[str])
    _tail: str = ""
    _tool_names: dict[str, str] = field(default_factory=dict[str, str])

    def apply(self, event: AgentEvent) -> AgentEvent:
        """Fold one event in; returns it, so a backend can `yield seen.apply(event)`."""
        match event:
            case SessionStarted(session_id=sid, model=model):
                self.session_id = sid or self.session_id
                self.model = model or self.model
            case TextDelta(text=text):
                self.add_text(text)
            case StepChanged(step_type=step_type):
                self.step_type = step_type
            case ToolCall(tool_id=tool_id, name=name):
                self._tool_names[tool_id] = name
            case ToolResult(tool_id=tool_id, ok=False, error_type=error_type) if error_type in _DENIED_TYPES:
                self.denied_actions.append(self._tool_names.get(tool_id, tool_id))
            case ToolResult():
                pass
            case StreamNotice(message=message, severity=severity):
                (self.stream_errors if severity == "error" else self.stream_warnings).append(message)
            case RunNotice(message=message):
                self.note(message)
            case Spawned(pid=pid):
                self.pid = pid
            case Finished():
                self.finished = event
                if event.session_id:
                    self.session_id = event.session_id
                self.denied_actions.extend(a for a in event.denied_actions if a not in self.denied_actions)
        return event

    def add_text(self, text: str) -> None:
        """Answer text streamed in (a delta, or what a copy of another fold receives of it)."""
        self._chunks.append(text)
        self._tail = (self._tail + text)[-TAIL_CHARS:]

    def streamed_since(self, chunks: int) -> tuple[str, int]:
        """The text streamed after the first `chunks` pieces, and how many pieces there are now."""
        return "".join(self._chunks[chunks:]), len(self._chunks)

    def note(self, notice: str) -> None:
        if notice not in self.notices:
            self.notices.append(notice)

    @property
    def tool_names(self) -> list[str]:
        """The tools the run called, in order."""
        return list(self._tool_names.values())

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
