"""The neutral event vocabulary every backend decoder produces, whatever CLI or API ran."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class Usage:
    """Token accounting for one run."""

    input_tokens: int = 0
    output_tokens: int = 0
    thinking_tokens: int = 0
    cached_tokens: int = 0
    total_tokens: int = 0


@dataclass(frozen=True, slots=True)
class SessionStarted:
    """The upstream named the conversation (session) this run belongs to."""

    session_id: str
    model: str | None = None
    warm: bool | None = None  # a session in a process already running (True) or one booted for this run (False)


@dataclass(frozen=True, slots=True)
class TextDelta:
    """A piece of the assistant's answer, in arrival order."""

    text: str


@dataclass(frozen=True, slots=True)
class StepChanged:
    """The upstream moved to another step of its turn; `step_type` is its own name for it (agy: `agent_response`,
    `tool`, `user_input`). Progress only: what a job is doing right now (gemini-status's `step_type`)."""

    step_type: str


@dataclass(frozen=True, slots=True)
class ToolCall:
    """The agent asked to run one of its tools."""

    tool_id: str
    name: str
    parameters: dict[str, Any] = field(default_factory=dict[str, Any])


@dataclass(frozen=True, slots=True)
class ToolResult:
    """The outcome of one tool call; `error_type` is set when the tool was refused or failed."""

    tool_id: str
    ok: bool
    output: str = ""
    error_type: str | None = None
    error_message: str | None = None


@dataclass(frozen=True, slots=True)
class StreamNotice:
    """A non-fatal warning or error the upstream reported inside the stream."""

    message: str
    severity: str = "warning"


@dataclass(frozen=True, slots=True)
class RunNotice:
    """Something the caller must be told (a `⚠️` line): an option not honoured, a continuation not taken."""

    message: str


@dataclass(frozen=True, slots=True)
class Spawned:
    """A process serves the run (the run is now `running`); `pid` leads its own process group. `warm`: it was
    running before this run (a kept process took the turn) rather than started for it."""

    pid: int
    warm: bool = False


@dataclass(frozen=True, slots=True)
class Finished:
    """The terminal event: the upstream's own verdict on the run.

    `text` is the authoritative full answer when the upstream sends one (else the deltas are the answer).
    """

    ok: bool
    status: str
    text: str | None = None
    error: str | None = None
    error_type: str | None = None
    usage: Usage | None = None
    num_turns: int | None = None
    structured_output: Any = None
    has_structured_output: bool = False
    denied_actions: tuple[str, ...] = ()
    session_id: str | None = None
    partial: bool = False  # the upstream says the text is incomplete even though the run counts as done
    files: tuple[str, ...] = ()  # absolute paths of the files the run wrote (media generations)
    # The models that answered, when the upstream says (the CLI's per-model stats, ACP's model_usage, the API's
    # model_version): the witness of a fallback to another model than the one asked for.
    models: tuple[str, ...] = ()


AgentEvent = (
    SessionStarted | TextDelta | StepChanged | ToolCall | ToolResult | StreamNotice | RunNotice | Spawned | Finished
)
