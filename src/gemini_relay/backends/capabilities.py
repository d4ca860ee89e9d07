"""What a backend can do besides answering, as protocols: a tool asks the registry for one of these and never
branches on which backend is active. A backend has a capability by implementing its protocol.

The data here is neutral: backends fill it, tools read it, and this module imports no backend.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, Protocol, runtime_checkable

from gemini_relay.backends.model_names import Catalog
from gemini_relay.core.vocabulary import BackendName, QuotaLevel
from gemini_relay.streams.transcript import Transcript

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".webp")  # the image files a backend saves
# A media file a backend names itself, `<date>-<slug>-<id><ext>`, and its `.json` sidecar, at the longest: the room a
# media folder must leave below PATH_MAX (checked before anything is generated).
GENERATED_SLUG_CHARS = 40
GENERATED_NAME_BYTES = len("20260101-000000-") + GENERATED_SLUG_CHARS + len("-abcdef") + len(".webp") + len(".json")


@dataclass(frozen=True)
class Conversation:
    """One saved conversation, as gemini-conversations lists it."""

    id: str
    last_active: str
    cwd: str
    first_prompt: str


@dataclass(frozen=True)
class ImageRequest:
    """Where gemini-image's file goes (`output_path` as given, else `default_dir`), and the shape it asked for."""

    output_path: str | None
    default_dir: Path
    aspect_ratio: str
    size: str | None


@dataclass(frozen=True)
class SavedImage:
    path: Path  # where the caller finds it (the copy)
    source: Path  # the upstream's own file
    dimensions: tuple[int, int] | None
    notices: list[str] = field(default_factory=list[str])


@dataclass(frozen=True)
class StoredFile:
    """A file kept by the upstream for later calls (the Gemini Files API: `files/<id>`, kept ~48 h)."""

    name: str  # files/<id>
    uri: str
    mime_type: str
    size_bytes: int | None
    expires: str | None
    display_name: str | None = None


@dataclass(frozen=True)
class ModelListing:
    """gemini-models' body for one backend: its lines, notices (a fallback list, say), and each model as
    (id, label) for structuredContent (seed 001's models / model_details)."""

    lines: list[str]
    notices: list[str] = field(default_factory=list[str])
    models: list[tuple[str, str]] = field(default_factory=list[tuple[str, str]])

    @classmethod
    def of_catalog(
        cls, backend: str, catalog: Catalog, aliases: Mapping[str, str], default: str, *, more: Sequence[str] = ()
    ) -> ModelListing:
        """The listing of a backend that lists its models in a catalog: each model (its label when it has one of its
        own), the aliases, the default, then `more`; a built-in catalog's notice says why the live list is missing."""
        lines = [
            f"Models for the {backend} — pass the id as `model`:",
            "",
            *(f"- {m.id} — {m.label}" if m.label and m.label != m.id else f"- {m.id}" for m in catalog.models),
            "",
            "Aliases: " + ", ".join(f"{alias} → {target}" for alias, target in aliases.items()),
            f"Default: {default}",
            *more,
        ]
        notices = [catalog.notice] if catalog.notice and not catalog.live else []
        return cls(lines, notices, [(m.id, m.label or m.id) for m in catalog.models])


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


@dataclass(frozen=True)
class QuotaWindow:
    """One window of a quota group (agy's bucket: the 5 h or the weekly limit)."""

    id: str
    name: str
    window: str
    remaining_fraction: float  # as the upstream last reported it, not adjusted for a reset since
    reset_time: str | None  # RFC 3339, UTC
    refilled: bool  # its reset time has passed since the reading: it counts as full

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"id": self.id, "name": self.name, "window": self.window}
        data["remaining_fraction"] = self.remaining_fraction
        if self.reset_time is not None:
            data["reset_time"] = self.reset_time
        data["refilled"] = self.refilled
        return data


@dataclass(frozen=True)
class QuotaGroupReading:
    """A quota group evaluated now: its level and remaining percent come from its tightest window."""

    name: str
    description: str
    level: QuotaLevel
    remaining_percent: int  # rounded down; the level is the authority (0.4 % reads 0, level critical)
    window: str  # the tightest window, the one that sets the level
    reset_time: str | None
    windows: tuple[QuotaWindow, ...]

    def compact(self) -> dict[str, Any]:
        data: dict[str, Any] = {"name": self.name, "level": self.level.value}
        data |= {"remaining_percent": self.remaining_percent, "window": self.window}
        if self.reset_time is not None:
            data["reset_time"] = self.reset_time
        return data

    def to_json(self) -> dict[str, Any]:
        data = self.compact()
        if self.description:
            data["description"] = self.description
        data["buckets"] = [w.to_json() for w in self.windows]
        return data


@dataclass(frozen=True)
class QuotaReport:
    """One quota reading (seed 001's agy_usage): when the upstream was asked, and each group."""

    checked_at: str  # RFC 3339, UTC
    groups: tuple[QuotaGroupReading, ...]

    def compact(self) -> dict[str, Any]:
        """The `quota` field of gemini-run, -status and -wait results."""
        return {"checked_at": self.checked_at, "groups": [g.compact() for g in self.groups]}

    def to_json(self) -> dict[str, Any]:
        return {"checked_at": self.checked_at, "groups": [g.to_json() for g in self.groups]}


@runtime_checkable
class ListsModels(Protocol):
    async def model_listing(self) -> ModelListing: ...


@runtime_checkable
class ListsAgents(Protocol):
    async def agents(self, cwd: Path | None = None) -> tuple[str, ...]:
        """The agent names `agent` takes (with cwd's project agents; default the project root's); raises
        BackendUnavailable when the upstream cannot list them."""
        ...


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

    def cached_quota(self) -> QuotaReport | None:
        """The last reading while it is young enough to trust; None otherwise. Never asks the upstream."""
        ...

    async def quota(self, max_age: float) -> QuotaReport:
        """A reading no older than `max_age` seconds, asking the upstream when the cache cannot answer (concurrent
        callers share one probe). Raises BackendUnavailable when the upstream cannot report its quota."""
        ...

    async def refresh_quota(self) -> None:
        """Keep the reading fresh until cancelled, when the operator turned the refresh on; returns at once when
        not. Never more than one probe at a time."""
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
    """An agent that makes image files itself: the relay asks it in words and copies the file it made."""

    @property
    def saved_name_bytes(self) -> int:
        """The bytes the name of a file it saves into a folder may take (checked against PATH_MAX up front)."""
        ...

    def image_prompt(self, prompt: str, aspect_ratio: str, size: str | None) -> str:
        """The run's prompt; raises InputError for a ratio or size the agent's image model does not make."""
        ...

    async def save_image(self, record: Transcript, request: ImageRequest, *, since: float) -> SavedImage:
        """After the image run (started at wall-clock `since`): the file the agent made, copied (jailed)."""
        ...


@runtime_checkable
class MakesMedia(Protocol):
    """An upstream that generates images, video and music (runs whose RunSpec.media is set) and keeps uploads."""

    @property
    def name(self) -> BackendName: ...

    def media_ready(self) -> None:
        """Raises BackendUnavailable, saying how to fix it, when no generation can run (no credentials)."""
        ...

    def latest_interaction(self, folder: Path) -> str | None:
        """The newest image interaction whose sidecar lies in `folder` (to continue its chain), or None."""
        ...

    async def list_files(self, limit: int) -> list[StoredFile]: ...

    async def upload_file(self, source: Path | BinaryIO, mime_type: str, display_name: str | None = None) -> StoredFile:
        """Upload a file by path, or from an open binary file (a file checked as opened is sent from its descriptor,
        never reopened by name); `display_name` defaults to the path's name."""
        ...

    async def delete_file(self, name: str) -> None: ...


@runtime_checkable
class CountsTokens(Protocol):
    """An upstream with a token counter (the Gemini API's countTokens): what a prompt costs, before it is sent."""

    @property
    def name(self) -> BackendName: ...

    def can_count_tokens(self) -> bool:
        """Credentials are there to count with (a counter without them is not asked)."""
        ...

    async def count_tokens(self, text: str, model: str | None) -> int:
        """The tokens `text` is for `model` (None: the backend's default); RunFailed when the upstream fails."""
        ...
