"""ScriptedBackend: a real Backend (the protocol in backends/base.py) whose runs play scripts instead of an upstream.

Each run takes the next queued Script (or, with none queued, echoes the prompt): SessionStarted, the script's deltas,
its other events (notices, tool calls), then Finished — or its error. A script can hold the run open on an
anyio.Event the test sets when it has seen what it waits for (a progress keepalive), so nothing sleeps. Every
RunSpec it was given is kept, in order, in `specs`.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncGenerator, Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import anyio

from gemini_relay.backends.agy.agy_image import SAVED_NAME_BYTES, image_prompt, save_generated_image
from gemini_relay.backends.asking import Answer, Question, current_asker
from gemini_relay.backends.capabilities import (
    Conversation,
    ConversationRows,
    DoctorSection,
    ImageRequest,
    ModelListing,
    SavedImage,
)
from gemini_relay.backends.checks import check_text_only
from gemini_relay.core.events import AgentEvent, Finished, RunNotice, SessionStarted, TextDelta, Usage
from gemini_relay.core.spec import RunSpec
from gemini_relay.core.vocabulary import BackendName
from gemini_relay.errors import RunFailed
from gemini_relay.streams.transcript import Transcript
from tests.fakes.fake_gemini_api import TINY_PNG

USAGE = Usage(input_tokens=12, output_tokens=8, thinking_tokens=3, total_tokens=23)
HOLD_BOUND = 10.0  # a held run waits at most this long for its release


@dataclass
class Script:
    deltas: Sequence[str] = ("Scripted answer.",)
    error: RunFailed | None = None  # raised after the deltas instead of finishing
    hold: anyio.Event | None = None  # after the deltas, wait for this before finishing
    ask: Question | None = None  # after the deltas, ask the run's caller this (as the warm CLI's permission request)
    events: Sequence[AgentEvent] = ()  # after the deltas, these as the upstream sent them (notices, tool calls)
    after_hold: Sequence[str] = ()  # deltas streamed once the hold is released
    served: Sequence[str] = ()  # the models the upstream says answered (Finished.models: a silent fallback's witness)
    partial: bool = False  # the upstream says the answer is incomplete (Finished.partial)
    warm: bool | None = None  # the session was in a process already running (as the warm CLI says: SessionStarted)


def answer(text: str, *, pieces: int = 1) -> Script:
    """A script answering `text` in `pieces` deltas that concatenate to it."""
    size = max(1, -(-len(text) // pieces))
    return Script(tuple(text[i : i + size] for i in range(0, len(text), size)) or ("",))


@dataclass
class ScriptedBackend:
    """Registered in place of the Gemini CLI (BackendRegistry overrides); no process, no network."""

    specs: list[RunSpec] = field(default_factory=list[RunSpec])
    answers: list[Answer] = field(default_factory=list[Answer])  # what each asked question got, in order
    _queue: list[Script] = field(default_factory=list[Script])
    # A model's own script, played by every run of that model (a consensus panel runs models in parallel, so a
    # queue's order would not say which model got which script); the queue serves every other run.
    by_model: dict[str, Script] = field(default_factory=dict[str, Script])
    judging: dict[str, Script] = field(default_factory=dict[str, Script])  # a model's script when it answers JSON
    on_run: Callable[[RunSpec], None] | None = None  # told of each run as it starts (a test's event to wait on)
    _sessions: dict[str, int] = field(default_factory=dict[str, int])
    _cwds: dict[str, str] = field(default_factory=dict[str, str])  # by session, least recently used first
    listed_cwd: str | None = "/project"  # the cwd gemini-conversations lists; None: each run's real cwd

    @property
    def name(self) -> BackendName:
        return BackendName("gemini")

    @property
    def command(self) -> str:
        return "gemini"

    @property
    def max_concurrent(self) -> int | None:
        return None

    def check(self, spec: RunSpec) -> None:
        """What every real backend refuses (backends/checks.py); scripts accept anything else."""
        check_text_only(spec)

    def queue(self, *scripts: Script) -> None:
        self._queue.extend(scripts)

    # The in-process tools' capabilities (backends/capabilities.py), so they too are served in memory.

    async def model_listing(self) -> ModelListing:
        lines = ["Models of the scripted backend:", "", "- gemini-2.5-pro (default)", "- gemini-2.5-flash"]
        return ModelListing(lines, ["The scripted list stands in for the upstream's."])

    async def conversation_rows(self, limit: int) -> ConversationRows:
        newest = reversed(self._cwds.items())  # newest first, as every backend lists them
        found = [Conversation(sid, "2026-01-01T00:00:00Z", self.listed_cwd or cwd, "a prompt") for sid, cwd in newest]
        return ConversationRows("scripted", found[:limit])

    async def doctor_section(self) -> DoctorSection:
        return DoctorSection(["## Scripted backend", "- ✅ scripts queued: ready"])

    async def help_text(self) -> str:
        return "Usage: scripted [options]"

    async def run(self, spec: RunSpec) -> AsyncGenerator[AgentEvent, None]:
        self.specs.append(spec)
        if self.on_run is not None:
            self.on_run(spec)
        script = self.judging.get(spec.model or "") if spec.json_schema is not None else None
        script = script or self.by_model.get(spec.model or "")
        if script is None:
            script = self._queue.pop(0) if self._queue else answer(f"Scripted answer to: {spec.prompt}")
        session = spec.conversation_id or str(uuid.uuid4())
        self._sessions[session] = self._sessions.get(session, 0) + 1
        self._cwds.pop(session, None)
        self._cwds[session] = str(spec.cwd)
        yield SessionStarted(session, model=spec.model or "gemini-2.5-pro", warm=script.warm)
        for delta in script.deltas:
            yield TextDelta(delta)
        for event in script.events:
            yield event
        if script.ask is not None:
            got = await current_asker().ask(script.ask)
            self.answers.append(got)
            yield RunNotice(f"asked: {got.outcome.value} {got.option_id or ''}".strip())
        if script.hold is not None:
            with anyio.fail_after(HOLD_BOUND):
                await script.hold.wait()
        for delta in script.after_hold:
            yield TextDelta(delta)
        if script.error is not None:
            raise script.error
        yield Finished(
            ok=True,
            status="SUCCESS",
            usage=USAGE,
            num_turns=self._sessions[session],
            session_id=session,
            models=tuple(script.served),
            partial=script.partial,
        )


@dataclass
class ScriptedImageBackend(ScriptedBackend):
    """A scripted backend whose agent makes image files itself, as agy does (capabilities.SavesImages): after an image
    run its conversation folder under `agent_state` holds a PNG, and save_image copies it with agy's own code
    (backends/agy/agy_image.py: the search of that folder, the jail and the link-safe write). What agy itself leaves
    there is tests/test_server_agy.py's."""

    project_root: Path = Path("/nonexistent")
    agent_state: Path = Path("/nonexistent")

    saved_name_bytes: int = SAVED_NAME_BYTES
    image_prompt = staticmethod(image_prompt)

    async def save_image(self, record: Transcript, request: ImageRequest, *, since: float) -> SavedImage:
        folder = self.agent_state / "brain" / (record.session_id or "no-session")
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "generated_image_1.png").write_bytes(TINY_PNG)
        jail = {"project_root": self.project_root, **asdict(request)}  # where it goes, and the shape asked for
        return save_generated_image(
            state_dir=self.agent_state,
            conversation_id=record.session_id,
            since=since,
            response_text=record.text,
            **jail,
        )


def held_backend(text: str) -> tuple[ScriptedBackend, anyio.Event]:
    """A backend whose first run streams `text`, then holds until the returned event is set."""
    hold = anyio.Event()
    backend = ScriptedBackend()
    backend.queue(Script(deltas=(text,), hold=hold))
    return backend, hold
