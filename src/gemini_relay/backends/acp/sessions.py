"""What a warm process is keyed by and what it serves: its Launch, its sessions (one per conversation) and the
mode and model last applied to each, plus the resident memory of its process group."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from gemini_relay.backends.acp.connection import AcpConnection
from gemini_relay.supervise._posix import group_members

SET_TIMEOUT = 10.0  # session/set_mode and session/set_model are local bookkeeping in the CLI

# Cosmetic variables: two callers differing only in these share a process.
_UNKEYED = frozenset({"TERM", "SHELL", "USER", "LANG", "NO_COLOR"})


@dataclass(frozen=True)
class Launch:
    """How to start one warm process: the binary, its full child env, and the directory it runs in."""

    binary: str
    env: Mapping[str, str] = field(hash=False, compare=False)
    cwd: Path = field(hash=False, compare=False)

    @property
    def key(self) -> tuple[str, tuple[tuple[str, str], ...]]:
        items = sorted((k, v) for k, v in self.env.items() if k not in _UNKEYED and not k.startswith("LC_"))
        return self.binary, tuple(items)


@dataclass
class SessionState:
    """One conversation living in one process. `mode`/`model` are what the process last applied to it."""

    session_id: str
    cwd: Path
    mode: str
    model: str | None
    lock: anyio.Lock = field(default_factory=anyio.Lock)


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
    """Apply a mode and model to the session when they differ from what it last ran with.

    Raises:
        AcpRpcError, AcpConnectionLost, TimeoutError.
    """
    with anyio.fail_after(SET_TIMEOUT):
        if state.mode != mode:
            await connection.request("session/set_mode", {"sessionId": state.session_id, "modeId": mode})
            state.mode = mode
        if model is not None and state.model != model:
            await connection.request("session/set_model", {"sessionId": state.session_id, "modelId": model})
            state.model = model


def session_state(session_id: str, cwd: Path, result: dict[str, Any]) -> SessionState:
    mode = _current(result, "modes", "currentModeId") or "default"
    return SessionState(session_id, cwd, mode, _current(result, "models", "currentModelId"))


def _current(result: dict[str, Any], group: str, key: str) -> str | None:
    section = result.get(group)
    value = section.get(key) if isinstance(section, dict) else None  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
    return value if isinstance(value, str) else None


def cli_home(env: Mapping[str, str]) -> Path:
    return Path(env.get("GEMINI_CLI_HOME") or env.get("HOME") or Path.home()).expanduser()
