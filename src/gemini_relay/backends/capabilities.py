"""What a backend can do besides answering, as protocols: a tool asks the registry for one of these and never
branches on which backend is active. A backend has a capability by implementing its protocol.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, runtime_checkable

from gemini_relay.backends.agy.image import SavedImage
from gemini_relay.backends.gemini_cli.sessions import Conversation
from gemini_relay.streams.transcript import Transcript


@dataclass(frozen=True)
class ModelListing:
    """gemini-models' body for one backend: its lines, and notices (a fallback list, say)."""

    lines: list[str]
    notices: list[str] = field(default_factory=list[str])


@dataclass(frozen=True)
class ConversationRows:
    source: str  # "agy", "Gemini CLI", "Gemini API"
    conversations: list[Conversation]
    notices: list[str] = field(default_factory=list[str])


@dataclass(frozen=True)
class DoctorSection:
    """One backend's part of gemini-doctor: its lines, and the problems that need action when it is active."""

    lines: list[str]
    problems: list[str] = field(default_factory=list[str])


@runtime_checkable
class ListsModels(Protocol):
    async def model_listing(self) -> ModelListing: ...


@runtime_checkable
class ListsConversations(Protocol):
    async def conversation_rows(self, limit: int) -> ConversationRows: ...


@runtime_checkable
class Diagnoses(Protocol):
    async def doctor_section(self) -> DoctorSection: ...


@runtime_checkable
class ShowsHelp(Protocol):
    async def help_text(self) -> str: ...


@runtime_checkable
class WarmsUp(Protocol):
    async def warm_up(self) -> None:
        """Probe (or start) what the first call would otherwise wait for; never raises for the upstream's failures."""
        ...


@runtime_checkable
class NamesConversationsUpFront(Protocol):
    def fresh_conversation_id(self) -> str:
        """An id a fresh run will take as its conversation id (RunSpec.session_id), so a job can name it at once."""
        ...


@runtime_checkable
class ReportsQuota(Protocol):
    def quota_low_for(self, model: str | None) -> str | None:
        """Why an optional-priority run should yield (the model's quota group runs low), from the last cached
        reading only; None when it may run (also when nothing was read yet: fail open)."""
        ...


@runtime_checkable
class Traits(Protocol):
    @property
    def default_model(self) -> str | None:
        """The model a call that names none runs on (None: the upstream's own choice)."""
        ...

    @property
    def search_tool(self) -> str:
        """How the prompt of gemini-search names the agent's web search tool."""
        ...


@runtime_checkable
class SavesImages(Protocol):
    async def save_image(
        self,
        record: Transcript,
        *,
        since: float,
        output_path: str | None,
        default_dir: Path,
        aspect_ratio: str,
        size: str | None,
    ) -> SavedImage:
        """After an image run: the file the agent made, copied into the project (jailed)."""
        ...
