"""The backend registry: the one list of backends, what each can do, how its runs are run, and the automatic choice.

Adding a backend is one entry in BACKENDS. The server (app.py) and the job supervisor build backends here alone; a
tool asks `provider(<capability protocol>)` for the active backend instead of branching on which one it is.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, replace
from enum import StrEnum
from pathlib import Path
from typing import Any, Protocol

from gemini_relay.backends.agy.backend import AgyBackend
from gemini_relay.backends.agy.warm import WarmAgyBackend
from gemini_relay.backends.api import ApiBackend
from gemini_relay.backends.base import Backend
from gemini_relay.backends.capabilities import (
    Diagnoses,
    ListsConversations,
    ListsModels,
    MakesMedia,
    NamesConversationsUpFront,
    ReportsQuota,
    SavesImages,
    ShowsHelp,
    Traits,
    WarmsUp,
)
from gemini_relay.backends.gemini_cli.backend import GeminiCliBackend
from gemini_relay.backends.gemini_cli.warm import GeminiBackend
from gemini_relay.backends.probe import ProbeCache
from gemini_relay.config import Settings
from gemini_relay.core.vocabulary import BackendName
from gemini_relay.errors import BackendUnavailable


class RunnerKind(StrEnum):
    """How the engine gets a backend's runs done."""

    DURABLE = "durable"  # a detached supervisor per job (outlives the server)
    INLINE = "inline"  # in the server process


class _Buildable(Backend, Protocol):
    def validate_config(self) -> None: ...


@dataclass(frozen=True)
class Entry:
    name: BackendName
    label: str  # for messages: "agy (Antigravity CLI)"
    build: Callable[[Settings, ProbeCache], _Buildable]
    runner: RunnerKind = RunnerKind.DURABLE
    warm_capable: bool = False  # with GEMINI_RELAY_WARM on, its runs are served in-process from warm children


BACKENDS: tuple[Entry, ...] = (
    Entry(BackendName.AGY, "agy (Antigravity CLI)", lambda s, p: WarmAgyBackend(s, p), warm_capable=True),
    Entry(BackendName.GEMINI, "Gemini CLI", lambda s, p: GeminiBackend(s, p), warm_capable=True),
    Entry(BackendName.API, "Gemini API (google-genai)", lambda s, _p: ApiBackend(s)),
)


@dataclass(frozen=True)
class Selection:
    backend: BackendName
    notice: str | None = None  # why this backend, when the user did not choose it


class BackendRegistry:
    """Every backend, built once from the settings, plus the per-process automatic choice."""

    def __init__(
        self,
        settings: Settings,
        probes: ProbeCache | None = None,
        *,
        overrides: Mapping[BackendName, Backend] | None = None,
        warm_here: bool | None = None,
    ) -> None:
        """`overrides` replaces the named backends with ready-made ones (tests: a scripted backend, no process).
        `warm_here`: this process owns the warm pools (the relay host does; a server does only when there is no
        host). Default: GEMINI_RELAY_WARM on and GEMINI_RELAY_HOST off."""
        self.settings = settings
        probes = probes or ProbeCache(settings.state_dir / "probes")
        self.warm_here = settings.warm and not settings.host if warm_here is None else warm_here
        # A warm child lives in the process that owns it: a server that owns one runs those backends inline.
        inline = self.warm_here and warm_here is None
        self.entries: Mapping[BackendName, Entry] = {
            e.name: replace(e, runner=RunnerKind.INLINE) if e.warm_capable and inline else e for e in BACKENDS
        }
        built: dict[BackendName, Backend] = {e.name: e.build(settings, probes) for e in BACKENDS}
        self.backends: Mapping[BackendName, Backend] = {**built, **(overrides or {})}
        self._auto: Selection | None = None
        self._notice_taken = False

    @property
    def agy(self) -> AgyBackend:
        backend = self.backends[BackendName.AGY]
        assert isinstance(backend, AgyBackend)
        return backend

    @property
    def gemini(self) -> GeminiCliBackend:
        backend = self.backends[BackendName.GEMINI]
        assert isinstance(backend, GeminiCliBackend)
        return backend

    async def open(self) -> None:
        """Enter every backend's warm pool in the owner's task (which must also call `aclose`); a no-op in a
        process that does not own the warm pools (a server whose runs go to the relay host)."""
        if not self.warm_here:
            return
        for backend in self.backends.values():
            opener: Callable[[], Awaitable[None]] | None = getattr(backend, "open", None)
            if opener is not None:
                await opener()

    def prewarm(self) -> None:
        """Boot the warm process of the active backend, when it keeps one, in the background (an agy user gets no
        ~250 MB Gemini CLI nobody calls)."""
        start: Callable[[], None] | None = getattr(self.backends[self.select().backend], "prewarm", None)
        if start is not None:
            start()

    def keeps_warm_process(self) -> bool:
        """The active backend boots a warm process ahead of the first call (the Gemini CLI over ACP, when found)."""
        check: Callable[[], bool] | None = getattr(self.backends[self.select().backend], "keeps_warm_process", None)
        return check is not None and check()

    async def aclose(self) -> None:
        """Stop every warm child of every backend (each one's group: SIGTERM, grace, SIGKILL), in the reverse order
        of `open` (each pool holds a task group, and task groups close innermost first); one that fails does not
        keep the others' children alive (an exit stack runs every closer, then raises)."""
        async with contextlib.AsyncExitStack() as stack:
            for backend in self.backends.values():
                closer: Callable[[], Awaitable[None]] | None = getattr(backend, "aclose", None)
                if closer is not None:
                    stack.push_async_callback(closer)

    def validate_config(self) -> None:
        """Fail fast on settings that name a backend explicitly (an explicit AGY_CLI_PATH that is not there)."""
        self.agy.validate_config()

    def backend(self, name: BackendName) -> Backend:
        return self.backends[name]

    # A tool asks for a capability; a backend has it by implementing the protocol (backends/capabilities.py).

    def models(self) -> ListsModels:
        return self._provider(ListsModels, "list models")  # type: ignore[no-any-return]

    def conversations(self) -> ListsConversations:
        return self._provider(ListsConversations, "list conversations")  # type: ignore[no-any-return]

    def diagnoses(self, name: BackendName | None = None) -> Diagnoses:
        return self._provider(Diagnoses, "check its setup", name)  # type: ignore[no-any-return]

    def shows_help(self) -> ShowsHelp:
        return self._provider(ShowsHelp, "show its help")  # type: ignore[no-any-return]

    def image_saver(self) -> SavesImages | None:
        """The active backend, when its agent makes image files itself (agy); None otherwise."""
        backend = self.backends[self.select().backend]
        return backend if isinstance(backend, SavesImages) else None

    def media(self) -> MakesMedia:
        """The backend that generates images, video and music: media jobs go to it whichever backend is active."""
        for backend in self.backends.values():
            if isinstance(backend, MakesMedia):
                return backend
        raise BackendUnavailable("No backend of this server generates media.")

    def default_model(self, name: BackendName) -> str | None:
        backend = self.backends[name]
        return backend.default_model if isinstance(backend, Traits) else None

    def search_tool(self, name: BackendName) -> str:
        backend = self.backends[name]
        return backend.search_tool if isinstance(backend, Traits) else "your web search tool"

    def fresh_conversation_id(self, name: BackendName) -> str | None:
        """An id for a fresh run's conversation, when the backend accepts one chosen up front."""
        backend = self.backends[name]
        return backend.fresh_conversation_id() if isinstance(backend, NamesConversationsUpFront) else None

    def quota_low_for(self, name: BackendName, model: str | None) -> str | None:
        backend = self.backends[name]
        return backend.quota_low_for(model) if isinstance(backend, ReportsQuota) else None

    async def warm_up(self) -> None:
        """Warm the active backend (probes, a warm process); its failures wait for the first real call."""
        backend = self.backends[self.select().backend]
        if isinstance(backend, WarmsUp):
            await backend.warm_up()

    def _provider(self, capability: Any, what: str, name: BackendName | None = None) -> Any:
        chosen = name or self.select().backend
        backend = self.backends[chosen]
        if not isinstance(backend, capability):
            raise BackendUnavailable(f"The {chosen.value} backend ({self.entries[chosen].label}) cannot {what}.")
        return backend

    def select(self) -> Selection:
        """GEMINI_MCP_BACKEND when set; else agy when found, else the Gemini CLI when found, else the API when a key
        is set, else the Gemini CLI (whose calls then say how to install it). Resolved once per process."""
        if self.settings.backend is not None:
            return Selection(self.settings.backend)
        if self._auto is None:
            self._auto = _choose(self.settings, self.agy.locate, self.gemini.locate)
        return self._auto

    def take_notice(self) -> str | None:
        """The selection notice, once: for the first reply of the process."""
        if self._notice_taken:
            return None
        self._notice_taken = True
        return self.select().notice


def _choose(
    settings: Settings, locate_agy: Callable[[], Path | None], locate_gemini: Callable[[], Path | None]
) -> Selection:
    agy = locate_agy()
    if agy is not None:
        return Selection(
            BackendName.AGY,
            f"Using the agy backend (Antigravity CLI at {agy}) because GEMINI_MCP_BACKEND is unset and agy "
            "was found. Set GEMINI_MCP_BACKEND=gemini to use the Gemini CLI instead.",
        )
    has_key = any(settings.env.get(k, "").strip() for k in ("GEMINI_API_KEY", "GOOGLE_API_KEY"))
    if locate_gemini() is None and has_key:
        return Selection(
            BackendName.API,
            "Using the api backend (the Gemini API through google-genai) because GEMINI_MCP_BACKEND is unset, "
            "neither agy nor the Gemini CLI was found, and an API key is set.",
        )
    return Selection(
        BackendName.GEMINI,
        "Using the gemini backend (Gemini CLI) because GEMINI_MCP_BACKEND is unset and agy was not found "
        "on PATH (set AGY_CLI_PATH, or GEMINI_MCP_BACKEND to choose explicitly).",
    )
