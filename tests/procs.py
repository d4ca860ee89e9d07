"""The live processes /proc lists, for the tests that check a run left nothing behind."""

from __future__ import annotations

import os
from collections.abc import Iterator

CHUNK = 1 << 16


def live_processes(environ_has: bytes = b"") -> Iterator[tuple[int, bytes, bytes]]:
    """Each live (non-zombie) process other than this one, as (pid, environ, cmdline) read from /proc; with
    `environ_has`, only those whose environment holds those bytes. Tests and benches scan /proc in polling loops:
    a process's environ is read first, so most are skipped after one read."""
    me = os.getpid()
    with os.scandir("/proc") as entries:
        names = [entry.name for entry in entries if entry.name.isdigit()]
    for name in names:
        if int(name) == me:
            continue
        try:
            environ = _read(f"/proc/{name}/environ")
            if environ_has not in environ:
                continue
            state = _read(f"/proc/{name}/stat").rpartition(b")")[2].split()[0]
            cmdline = _read(f"/proc/{name}/cmdline")
        except (OSError, IndexError):  # gone between the listing and the reads
            continue
        if state not in (b"Z", b"X"):
            yield int(name), environ, cmdline


def _read(path: str) -> bytes:
    """A /proc file's bytes (os.read, not pathlib: a scan reads hundreds of them per poll)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        parts = []
        while chunk := os.read(fd, CHUNK):
            parts.append(chunk)
        return b"".join(parts)
    finally:
        os.close(fd)


def processes_with_env(key: str, value: str) -> list[int]:
    """Live processes whose environment holds `key=value` (a test's home: its upstream processes)."""
    marker = f"{key}={value}".encode()
    return [pid for pid, environ, _ in live_processes(marker) if marker in environ.split(b"\0")]
