"""POSIX primitives for process groups. Liveness reads /proc because zombies are reaped late here."""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path

_PROC = Path("/proc")


def group_members(pgid: int) -> list[int]:
    """PIDs in process group `pgid` that are not zombies.

    `killpg(pgid, 0)` still succeeds while an exited member waits to be reaped by a slow PID 1, so it would make
    every shutdown wait the full grace period.
    """
    if not _PROC.is_dir():
        return [pgid] if _killpg_probe(pgid) else []
    members: list[int] = []
    for entry in os.scandir(_PROC):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(entry.path, "stat").read_bytes()
        except OSError:
            continue
        # The command name is in parentheses and may contain spaces: parse after the last ')'.
        fields = stat.rpartition(b")")[2].split()
        if len(fields) < 3:
            continue
        state, pgrp = fields[0], fields[2]
        if state in (b"Z", b"X"):
            continue
        if int(pgrp) == pgid:
            members.append(int(entry.name))
    return members


def group_alive(pgid: int) -> bool:
    return bool(group_members(pgid))


def signal_group(pgid: int, sig: signal.Signals) -> None:
    # ESRCH: the group is already gone; EPERM: a member changed credentials, nothing more we may do.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def _killpg_probe(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def open_pidfd(pid: int) -> int | None:
    """A pidfd that becomes readable when `pid` exits, or None where the kernel lacks pidfd_open."""
    opener = getattr(os, "pidfd_open", None)
    if opener is None:
        return None
    try:
        fd: int = opener(pid)
    except OSError:
        return None
    return fd
