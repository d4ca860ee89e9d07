"""What a warm process is keyed by and what it serves: its Launch, its state in the pool (WarmProcess: sessions, spares
and counters), a prompt's Lease, the mode and model last applied to each session, and its group's resident memory."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import anyio

from gemini_relay.backends.gemini_cli.acp.connection import AcpConnection
from gemini_relay.backends.gemini_cli.acp.session_files import Recording, ensure_recorded, put_back
from gemini_relay.backends.gemini_cli.sessions import header_id
from gemini_relay.backends.gemini_cli.settings import gemini_home
from gemini_relay.log import logger
from gemini_relay.supervise.groups import group_members

SET_TIMEOUT = 10.0  # session/set_mode and session/set_model are local bookkeeping in the CLI

# Cosmetic variables: two callers differing only in these share a process.
_UNKEYED = frozenset({"TERM", "SHELL", "USER", "LANG", "NO_COLOR"})


@dataclass(frozen=True)
class Launch:
    """How to start one warm process: the binary, its full child env, and the directory it runs in."""

    binary: str
    env: Mapping[str, str] = field(hash=False, compare=False)
    cwd: Path = field(hash=False, compare=False)

    @cached_property  # read on every lease: the env is sorted once
    def key(self) -> tuple[str, str, tuple[tuple[str, str], ...]]:
        """The process's cwd is part of it: the CLI reads its startup settings there, so a process started in one
        project (a user without a CLI home folder) does not serve another's sessions."""
        items = sorted((k, v) for k, v in self.env.items() if k not in _UNKEYED and not k.startswith("LC_"))
        return self.binary, str(self.cwd), tuple(items)


@dataclass
class SessionState:
    """One conversation living in one process. `mode`/`model` are what the process last applied to it;
    `default_model` is the model the CLI gave it when it was opened (its settings' model, else `auto`)."""

    session_id: str
    cwd: Path
    mode: str
    model: str | None
    default_model: str | None = None
    lock: anyio.Lock = field(default_factory=anyio.Lock)
    recording: Recording | None = None  # a spare's recording as made (put back if a cold CLI deletes it)


def group_rss(pgid: int) -> int:
    """Resident memory of every process in the group, from /proc/<pid>/status VmRSS (bytes)."""
    total = 0
    for pid in group_members(pgid):
        try:
            status = Path(f"/proc/{pid}/status").read_text(encoding="ascii", errors="replace")
        except OSError:
            continue
        for line in status.splitlines():
            if line.startswith("VmRSS:"):
                parts = line.split()
                if len(parts) >= 2 and parts[1].isdigit():
                    total += int(parts[1]) * 1024
                break
    return total


async def configure(connection: AcpConnection, state: SessionState, mode: str, model: str | None) -> None:
    """Apply a mode and model to the session when they differ from what it last ran with. No model means the CLI's
    default, as a cold run without -m gets: a spare another caller set, or an earlier turn's model, is undone.

    Raises:
        AcpRpcError, AcpConnectionLost, TimeoutError.
    """
    with anyio.fail_after(SET_TIMEOUT):
        if state.mode != mode:
            await connection.request("session/set_mode", {"sessionId": state.session_id, "modeId": mode})
            state.mode = mode
        model = model or state.default_model
        if model is not None and state.model != model:
            await connection.request("session/set_model", {"sessionId": state.session_id, "modelId": model})
            state.model = model


def session_state(session_id: str, cwd: Path, result: dict[str, Any]) -> SessionState:
    mode = _current(result, "modes", "currentModeId") or "default"
    model = _current(result, "models", "currentModelId")
    return SessionState(session_id, cwd, mode, model, default_model=model)


def _current(result: dict[str, Any], group: str, key: str) -> str | None:
    section = result.get(group)
    value = section.get(key) if isinstance(section, dict) else None  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
    return value if isinstance(value, str) else None


Settings = tuple[str, str | None]  # (ACP mode id, model id or None for the CLI's default)
SpareKey = tuple[Path, str, str | None]  # (cwd, mode, model): a spare is made ready for exactly these


@dataclass(eq=False)
class WarmProcess:
    launch: Launch
    ready: anyio.Event = field(default_factory=anyio.Event)
    connection: AcpConnection | None = None
    error: BaseException | None = None
    sessions: dict[str, SessionState] = field(default_factory=dict[str, SessionState])
    spares: dict[SpareKey, list[SessionState]] = field(default_factory=dict[SpareKey, list[SessionState]])
    spare_target: dict[SpareKey, int] = field(default_factory=dict[SpareKey, int])  # grows with demand
    spare_making: dict[SpareKey, int] = field(default_factory=dict[SpareKey, int])  # spares being made
    spare_sent: dict[SpareKey, int] = field(default_factory=dict[SpareKey, int])  # ... whose session/new is sent
    spare_done: anyio.Event = field(default_factory=anyio.Event)  # set (and replaced) as each spare is made
    first_spare: SpareKey | None = None  # prewarmed: the spare made once the process is up
    new_lock: anyio.Lock = field(default_factory=anyio.Lock)  # concurrent session/new contend inside the CLI
    active: int = 0  # leases: prompts running, or about to (their session is being found)
    leases_ended: anyio.Event = field(default_factory=anyio.Event)  # set (and replaced) whenever `active` drops to 0
    prompts: int = 0
    draining: bool = False
    last_used: float = field(default_factory=time.monotonic)
    started_at: float = field(default_factory=time.time)  # wall clock: compared with session files' start times
    created: set[str] = field(default_factory=set[str])  # every session/new id: their unused files are swept
    rss_checked: float = field(default_factory=time.monotonic)
    successor: WarmProcess | None = None  # booting to replace this one, which serves until it is ready
    replaces: WarmProcess | None = None  # the process this one replaces once ready
    replaced_because: str = ""

    @property
    def usable(self) -> bool:
        return not self.draining and (self.connection is None or self.connection.alive) and self.error is None


@dataclass
class Lease:
    """A conversation's session for the length of one prompt; the conversation's lock is held meanwhile."""

    connection: AcpConnection
    session: SessionState
    created: bool  # session/new (a fresh conversation) rather than a live or loaded one
    _warm: WarmProcess
    warm: bool = False  # its process was up before this run asked for it (False: booted, or waited for, now)

    @property
    def process_cwd(self) -> Path:
        """The folder the process runs in (not the session's: one process serves every project)."""
        return self._warm.launch.cwd

    @property
    def home(self) -> Path:
        """The CLI home the process records its sessions in."""
        return gemini_home(self._warm.launch.env)

    def discard(self) -> None:
        """The process misbehaved (a turn that would not settle): stop it once this lease ends."""
        self._warm.draining = True
        self.connection.close_soon()


SPARE_KEYS = 3  # (cwd, mode, model) keys whose spares are refilled


def close_when_idle(warm: WarmProcess) -> None:
    """Close a draining process once no prompt runs and no session/new is in flight: a session whose creation is
    cut off leaves a recording whose id nobody learns, so nobody could sweep it."""
    if warm.active == 0 and not sum(warm.spare_making.values()) and warm.connection is not None:
        warm.connection.close_soon()


def session_count(warm: WarmProcess) -> int:
    """Every session the process holds: conversations, spares (dropped ones too: the CLI keeps them), and spares
    being made."""
    return len(warm.created | warm.sessions.keys()) + sum(warm.spare_making.values())


async def take_spare(warm: WarmProcess, key: SpareKey, *, any_settings: bool = False) -> SessionState | None:
    """A ready spare for `key`; with any_settings, one for the same cwd in another mode or model (the run then
    applies its own settings, one set_mode/set_model round trip cheaper than session/new).

    A spare's recording deleted by a cold CLI's session cleanup is put back (session_files); a spare whose
    recording cannot be is dropped, since its first prompt would start a file nobody could resume."""
    keys = [key] if not any_settings else [k for k in warm.spares if k[0] == key[0]]
    for candidate in keys:
        states = warm.spares.get(candidate, [])
        while states:
            state = states.pop(0)
            # The usual cases, handled here: the recording is where the spare left it (one small read), or a cold
            # CLI deleted it (one small write). A worker thread costs a call more than either on a busy machine;
            # the search and the repair are for the rare rest.
            if state.recording is not None and header_id(state.recording.path) == state.session_id:
                return state
            if state.recording is not None and put_back(state.recording):
                return state
            home = gemini_home(warm.launch.env)
            if await anyio.to_thread.run_sync(ensure_recorded, home, state.session_id, state.recording):
                return state
            logger.info("Dropped a spare warm session whose recording was deleted")
    return None
