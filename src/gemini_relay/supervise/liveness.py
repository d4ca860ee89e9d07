"""Is a recorded process still the one we started? pid + start time (+ boot id), read from /proc."""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class ProcessInfo:
    """Who owns a job: the supervisor's pid plus its start time, so a recycled pid is never mistaken for it."""

    pid: int
    start_ticks: int | None
    boot_id: str | None = None
    # A relay host runs many jobs: it is never signalled to stop one of them (that stopped all of them); its jobs
    # are cancelled through the host or the cancel file it watches.
    shared: bool = False


_BOOT_ID = Path("/proc/sys/kernel/random/boot_id")


def _stat_fields(pid: int) -> list[bytes] | None:
    try:
        raw = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return None
    # Fields after the parenthesised command name (which may contain spaces): state is [0], starttime is [19].
    return raw.rpartition(b")")[2].split()


def start_ticks(pid: int) -> int | None:
    fields = _stat_fields(pid)
    return int(fields[19]) if fields is not None and len(fields) > 19 else None


def boot_id() -> str | None:
    try:
        return _BOOT_ID.read_text(encoding="ascii").strip()
    except OSError:
        return None


_OWN: dict[int, tuple[int | None, str | None]] = {}  # this process's start ticks and boot id (by pid: a fork's own)


def describe(pid: int, *, shared: bool = False) -> ProcessInfo:
    if pid == os.getpid():  # a host describes itself on every job: two /proc reads that never change
        ticks, boot = _OWN.get(pid) or _OWN.setdefault(pid, (start_ticks(pid), boot_id()))
        return ProcessInfo(pid=pid, start_ticks=ticks, boot_id=boot, shared=shared)
    return ProcessInfo(pid=pid, start_ticks=start_ticks(pid), boot_id=boot_id(), shared=shared)


def is_alive(info: ProcessInfo) -> bool:
    """True only for the same process (not a recycled pid), running and not a zombie."""
    if info.boot_id and (current := boot_id()) and current != info.boot_id:
        return False
    fields = _stat_fields(info.pid)
    if fields is None or len(fields) <= 19:
        return _signal_probe(info.pid) if fields is None and not Path("/proc").is_dir() else False
    if fields[0] in (b"Z", b"X"):
        return False
    return info.start_ticks is None or int(fields[19]) == info.start_ticks


def _signal_probe(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def signal_if_alive(info: ProcessInfo, sig: int) -> bool:
    """Signal the process only if it is still the one recorded. True when a signal was sent."""
    if not is_alive(info):
        return False
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(info.pid, sig)
        return True
    return False
