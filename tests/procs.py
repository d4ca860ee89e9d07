"""The live processes /proc lists, for the tests that check a run left nothing behind."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path


def live_processes() -> Iterator[tuple[int, bytes, bytes]]:
    """Each live (non-zombie) process other than this one, as (pid, environ, cmdline) read from /proc."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environ = (entry / "environ").read_bytes()
            state = (entry / "stat").read_bytes().rpartition(b")")[2].split()[0]
            cmdline = (entry / "cmdline").read_bytes()
        except (OSError, IndexError):  # gone between the listing and the reads
            continue
        if state not in (b"Z", b"X"):
            yield int(entry.name), environ, cmdline


def processes_with_env(key: str, value: str) -> list[int]:
    """Live processes whose environment holds `key=value` (a test's home: its upstream processes)."""
    marker = f"{key}={value}".encode()
    return [pid for pid, environ, _ in live_processes() if marker in environ.split(b"\0")]
