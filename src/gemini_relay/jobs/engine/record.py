"""A run's live record (RunRecord): its transcript plus its lifecycle, folded from the backend's events."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

from gemini_relay.core.events import AgentEvent, Finished, RunNotice, SessionStarted, Spawned
from gemini_relay.core.vocabulary import BackendName, FailureReason, RunState
from gemini_relay.streams.transcript import Transcript


@dataclass(frozen=True)
class RecordChange:
    """What changed in a run's record, as a server attached to the run shows it: its phase (queued, starting,
    running) and conversation for the keepalives, and the answer's text streamed since the previous change (the
    keepalives quote its tail; a run the server itself stops keeps it as partial text)."""

    state: RunState
    session_id: str | None = None
    model: str | None = None
    text: str = ""


@dataclass(kw_only=True)
class RunRecord(Transcript):
    """The live state of one run: the transcript of its events plus its lifecycle.

    One writer (the engine where the run executes, folding the backend's events through `apply`); readers
    (keepalives) only read. A server's record of a run in the relay host is a copy: it takes in the host's
    changes (`follow`), never the events themselves.
    """

    backend: BackendName
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    state: RunState = RunState.QUEUED
    created_at: float = field(default_factory=time.monotonic)
    started_at: float | None = None
    ended_at: float | None = None
    first_output_at: float | None = None  # the upstream's first answer event (text, a tool step, its verdict)
    warm: bool | None = None  # whether a process already running served the run (None: no process, the API)
    failure: FailureReason | None = None
    error: str | None = None
    reused_job: bool = False  # an idempotency key matched an existing job: run_id names that job
    partial: bool = False  # the backend says the text is incomplete even though the run counts as done
    listener: Callable[[AgentEvent], None] | None = field(default=None, repr=False)  # e.g. a job-store mirror

    def apply(self, event: AgentEvent) -> AgentEvent:
        """Fold one event into the record (the transcript's fold, plus the lifecycle it implies)."""
        super().apply(event)
        # The first event of any kind means the upstream is working: a warm session or the API never spawns, and
        # waiting for a Spawned kept such runs `starting` for their whole life.
        if not self.state.terminal:
            self.state = RunState.RUNNING
        if isinstance(event, Finished):
            self.partial = self.partial or event.partial
        if isinstance(event, Spawned) or (isinstance(event, SessionStarted) and event.warm is not None):
            self.warm = event.warm
        elif self.first_output_at is None and not isinstance(event, (SessionStarted, RunNotice)):
            self.first_output_at = time.monotonic()
        if self.listener is not None:
            self.listener(event)
        return event

    def follow(self, progress: RecordChange) -> None:
        """Take in a change of the run's own record (the host's, which folds the events)."""
        if not self.state.terminal:
            self.state = progress.state
        self.session_id = progress.session_id or self.session_id
        self.model = progress.model or self.model
        if progress.text:
            self.add_text(progress.text)

    @property
    def elapsed(self) -> float:
        start = self.started_at or self.created_at
        return (self.ended_at or time.monotonic()) - start
