"""The backend registry: the one list of backends, what each can do, and the automatic choice.

A backend is one package under backends/ that exports `ENTRY` (entry.py), and one `register` line below. The server
(app.py) and the relay host build backends here alone; a tool asks for a capability (`models()`, `media()`, ...:
backends/capabilities.py) instead of branching on which backend is active, and nothing outside this module names a
backend's package.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from gemini_relay.backends import agy, api, gemini_cli
from gemini_relay.backends.base import Backend
from gemini_relay.backends.capabilities import (
    CountsTokens,
    Diagnoses,
    ListsAgents,
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
from gemini_relay.backends.entry import BackendEntry, BuiltBackend
from gemini_relay.backends.env import relevant_env as _relevant_env
from gemini_relay.backends.probe import ProbeCache
from gemini_relay.config import DISABLED, Settings
from gemini_relay.core.vocabulary import BackendName
from gemini_relay.errors import BackendUnavailable, ConfigError

_ENTRIES: dict[BackendName, BackendEntry] = {}


def register(entry: BackendEntry) -> Callable[[], None]:
    """Add a backend to every registry built from now on; returns the call that takes it out again (tests).

    Raises:
        ValueError: its name or an alias is already taken.
    """
    taken = {spelling for known in _ENTRIES.values() for spelling in (known.name, *known.aliases)}
    clash = taken & {entry.name, *entry.aliases}
    if clash:
        raise ValueError(f"backend {entry.name}: {', '.join(sorted(clash))} is already registered")
    _ENTRIES[entry.name] = entry

    def unregister() -> None:
        if _ENTRIES.get(entry.name) is entry:
            del _ENTRIES[entry.name]

    return unregister


register(agy.ENTRY)
register(gemini_cli.ENTRY)
register(api.ENTRY)


def entries() -> tuple[BackendEntry, ...]:
    """Every registered backend, in the order of the automatic choice."""
    return tuple(sorted(_ENTRIES.values(), key=lambda e: e.preference))


def names() -> tuple[BackendName, ...]:
    """The names of the registered backends: the closed set GEMINI_MCP_BACKEND chooses from."""
    return tuple(e.name for e in entries())


def resolve_name(raw: str) -> BackendName:
    """A backend's name or alias (as GEMINI_MCP_BACKEND gives it) -> its name.

    Raises:
        ConfigError: no registered backend is called that.
    """
    spelling = raw.strip().lower()
    for entry in entries():
        if spelling in (entry.name, *entry.aliases):
            return entry.name
    known = ", ".join(s for e in entries() for s in (e.name, *e.aliases))
    raise ConfigError(f"GEMINI_MCP_BACKEND={raw!r} is not one of: {known}", variable="GEMINI_MCP_BACKEND")


def relevant_env(environ: Mapping[str, str]) -> dict[str, str]:
    """The part of a server's environment that can change what a backend does (backends/env.py), with the variables
    each registered backend reads beyond the shared allowlist."""
    known = entries()
    return _relevant_env(
        environ,
        prefixes=tuple(p for e in known for p in e.env_prefixes),
        keys=frozenset(k for e in known for k in e.env_keys),
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
        refused_choice: str | None = None,
    ) -> None:
        """`overrides` replaces the named backends with ready-made ones (tests: a scripted backend, no process).
        `warm_here`: this process owns the warm pools (the relay host does; a server does only when there is no
        host). Default: GEMINI_RELAY_WARM on and GEMINI_RELAY_HOST off. `refused_choice`: the GEMINI_MCP_BACKEND
        value a server left out as naming no backend (app.explained_deps): the automatic choice's notice says so
        instead of calling the variable unset.

        Raises:
            ConfigError: GEMINI_MCP_BACKEND names no registered backend, or a backend's settings section is malformed.
        """
        self.settings = settings
        probes = probes or ProbeCache(settings.state_dir / "probes")
        self.warm_here = settings.warm and not settings.host if warm_here is None else warm_here
        self.entries: Mapping[BackendName, BackendEntry] = {e.name: e for e in entries()}
        self._chosen = resolve_name(settings.backend) if settings.backend is not None else None
        self.refused_choice = refused_choice if self._chosen is None else None
        built: dict[BackendName, BuiltBackend] = {e.name: e.build(settings, probes) for e in self.entries.values()}
        self._built = built
        self.backends: Mapping[BackendName, Backend] = {**built, **(overrides or {})}
        self._auto: Selection | None = None
        self._notice_taken = False

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
        for backend in self._built.values():
            backend.validate_config()

    def backend(self, name: BackendName) -> Backend:
        """Raises BackendUnavailable for a name no backend of this registry has (a job of another relay version)."""
        try:
            return self.backends[name]
        except KeyError:
            raise BackendUnavailable(
                f"No backend is called {name!r} here (known: {', '.join(self.backends)})."
            ) from None

    def active_entry(self) -> BackendEntry:
        """The active backend's declaration: what the instructions and tool descriptions say of it."""
        return self.entries[self.select().backend]

    def label(self, name: BackendName) -> str:
        """`agy backend (Antigravity CLI)`: a backend as messages name it."""
        entry = self.entries.get(name)
        return entry.label if entry is not None else f"{name} backend"

    def diagnosed(self) -> list[BackendName]:
        """The backends gemini-doctor checks: the active one, and those always shown (the CLIs: a user switching
        upstream wants to see both)."""
        active = self.select().backend
        return [name for name, entry in self.entries.items() if name == active or entry.always_diagnosed]

    def fallback_for(self, name: BackendName) -> str | None:
        """The model a capacity failure on `name` is retried on (GEMINI_FALLBACK_MODEL, else the backend's own), or
        None when fallback is off."""
        raw = self.settings.fallback_model
        if raw is None:
            entry = self.entries.get(name)
            return entry.fallback_model if entry is not None else None
        return None if raw.lower() in DISABLED else raw

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

    def agent_lister(self) -> ListsAgents | None:
        """The active backend, when it has custom agents (agy); None otherwise."""
        backend = self.backends[self.select().backend]
        return backend if isinstance(backend, ListsAgents) else None

    def media(self) -> MakesMedia:
        """The backend that generates images, video and music: media jobs go to it whichever backend is active."""
        for backend in self.backends.values():
            if isinstance(backend, MakesMedia):
                return backend
        raise BackendUnavailable("No backend of this server generates media.")

    def token_counter(self) -> CountsTokens | None:
        """A backend that can count tokens now (the API, when a key is set), whichever backend is active; None
        when there is none (the caller then uses the labelled estimate)."""
        for backend in self.backends.values():
            if isinstance(backend, CountsTokens) and backend.can_count_tokens():
                return backend
        return None

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

    def quota_reporter(self, name: BackendName | None = None) -> ReportsQuota | None:
        """The backend `name` (default: the active one) when it reports a quota (agy); None otherwise, also for a
        name no backend here has (a job of another relay version)."""
        backend = self.backends.get(name or self.select().backend)
        return backend if isinstance(backend, ReportsQuota) else None

    async def refresh_quota(self) -> None:
        """The active backend's background quota refresh, until cancelled; returns at once when it has none or the
        operator left it off."""
        reporter = self.quota_reporter()
        if reporter is not None:
            await reporter.refresh_quota()

    async def warm_up(self) -> None:
        """Warm the active backend (probes, a warm process); its failures wait for the first real call."""
        backend = self.backends[self.select().backend]
        if isinstance(backend, WarmsUp):
            await backend.warm_up()

    def _provider(self, capability: Any, what: str, name: BackendName | None = None) -> Any:
        chosen = name or self.select().backend
        backend = self.backends[chosen]
        if not isinstance(backend, capability):
            raise BackendUnavailable(f"The {self.label(chosen)} cannot {what}.")
        return backend

    def select(self) -> Selection:
        """GEMINI_MCP_BACKEND when set; else the first backend, by preference, that detects itself (agy when found,
        else the Gemini CLI when found, else the API when a key is set), else the default choice (the Gemini CLI,
        whose calls then say how to install it). Resolved once per process."""
        if self._chosen is not None:
            return Selection(self._chosen)
        if self._auto is None:
            self._auto = choose(tuple(self.entries.values()), self.settings, self.unset_reason())
        return self._auto

    def unset_reason(self) -> str:
        """Why no backend was named: `GEMINI_MCP_BACKEND is unset`, or the refused value."""
        if self.refused_choice is not None:
            return f"GEMINI_MCP_BACKEND={self.refused_choice!r} names no backend"
        return "GEMINI_MCP_BACKEND is unset"

    def alternatives(self, name: BackendName | None = None) -> str | None:
        """The other backends and what would make each usable (`api — set GEMINI_API_KEY (…)`), for a call whose
        backend (default: the active one) could not start; None when no other backend is registered."""
        active = self.entries.get(name or self.select().backend)
        return _alternatives(active, tuple(self.entries.values()), self.settings)

    def take_notice(self) -> str | None:
        """The selection notice, once: for the first reply of the process."""
        if self._notice_taken:
            return None
        self._notice_taken = True
        return self.select().notice


def choose(
    candidates: tuple[BackendEntry, ...], settings: Settings, unset: str = "GEMINI_MCP_BACKEND is unset"
) -> Selection:
    """The automatic choice among `candidates` (in preference order), with the notice that says why (`unset`: why
    none was named)."""
    absent: list[str] = []
    for entry in candidates:
        found = entry.detect(settings) if entry.detect is not None else None
        if found is not None:
            return Selection(entry.name, _notice(entry, [unset, *absent, found], candidates, settings))
        if entry.detect is not None and entry.absent:
            absent.append(entry.absent)
    default = next((e for e in candidates if e.default_choice), None)
    if default is None:
        raise ConfigError("GEMINI_MCP_BACKEND is unset and no backend is registered as the default choice")
    return Selection(default.name, _notice(default, [unset, *absent], candidates, settings))


def _notice(entry: BackendEntry, why: list[str], candidates: tuple[BackendEntry, ...], settings: Settings) -> str:
    because = ", ".join(why[:-1]) + " and " + why[-1] if len(why) > 1 else why[0]
    notice = f"Using the {entry.label} because {because}."
    others = _alternatives(entry, candidates, settings)
    return f"{notice} {others}" if others else notice


def _alternatives(active: BackendEntry | None, candidates: tuple[BackendEntry, ...], settings: Settings) -> str | None:
    """`Other backends: agy — …; api — set GEMINI_API_KEY (…). Choose one with GEMINI_MCP_BACKEND (agy, api).`"""
    others = [e for e in candidates if e is not active]
    if not others:
        return None
    parts = []
    for entry in others:
        found = entry.detect(settings) if entry.detect is not None else None
        how = f"usable now: {found}" if found else entry.enable
        parts.append(f"{entry.name} — {how}" if how else entry.name)
    names = ", ".join(e.name for e in others)
    return f"Other backends: {'; '.join(parts)}. Choose one with GEMINI_MCP_BACKEND ({names})."
