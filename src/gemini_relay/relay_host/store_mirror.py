"""StoreMirror: a live run's record copied into its job's directory as it goes (relay_host/executor.py)."""

from __future__ import annotations

import time

from gemini_relay.core.events import AgentEvent, SessionStarted, TextDelta
from gemini_relay.core.vocabulary import RunState
from gemini_relay.jobs.engine.record import RunRecord
from gemini_relay.jobs.store.job_store import JobStore, Progress
from gemini_relay.supervise.liveness import start_ticks


class StoreMirror:
    """Copies a live record into the store: text as it streams (partial text survives a crash), progress often."""

    def __init__(self, store: JobStore, job_id: str, record: RunRecord, started_at: float) -> None:
        self._store = store
        self._job_id = job_id
        self._record = record
        self._started_at = started_at
        self._written: Progress | None = None

    def on_event(self, event: AgentEvent) -> None:
        if isinstance(event, TextDelta) and event.text:
            self._store.append_text(self._job_id, event.text)
        elif isinstance(event, SessionStarted):
            self.flush()

    def flush(self) -> None:
        progress = self.current()
        if self._written is None or _changed(self._written, progress):
            self._store.write_progress(self._job_id, progress)
            self._written = progress

    def current(self) -> Progress:
        """The record's progress as flush() would write it."""
        record = self._record
        state = record.state if record.state in (RunState.STARTING, RunState.RUNNING) else RunState.RUNNING
        return Progress(
            state=state,
            session_id=record.session_id,
            model=record.model,
            cli_pid=record.pid,
            cli_start_ticks=start_ticks(record.pid) if record.pid else None,
            started_at=self._started_at,
            updated_at=time.time(),
            step_type=record.step_type,
        )

    def written(self, progress: Progress) -> None:
        """`progress` is on disk already (written with the job's directory)."""
        self._written = progress


def _changed(old: Progress, new: Progress) -> bool:
    return (old.state, old.session_id, old.model, old.cli_pid, old.step_type) != (
        new.state,
        new.session_id,
        new.model,
        new.cli_pid,
        new.step_type,
    )
