"""One `setup` that writes at a time: `<state dir>/setup.lock`, held (flock) from reading the record to saving it.

Two runs at once (`setup --client cursor` in one terminal, `--client vscode` in another) would each load the record,
add their file and save it, and the later save would drop the earlier run's file, so `--remove` would leave it
behind. The lock file stays in place (removing it would let a third run lock a fresh file while the second still
holds the old one); it holds the pid of the run that has it, for the waiting line.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path

LOCK_NAME = "setup.lock"
LOCK_WAIT = 300.0  # a run holding it waits at most CLI_TIMEOUT per `claude` call; this is well past a few of them
_POLL = 0.05


class LockBusy(Exception):
    """Another setup held the lock for longer than LOCK_WAIT."""


@contextlib.contextmanager
def setup_lock(state_dir: Path, waiting: Callable[[str], None]) -> Iterator[None]:
    """Hold the setup lock; `waiting` is told once when another run has it (with its pid)."""
    state_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(state_dir / LOCK_NAME, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
    try:
        if not _try(fd):
            holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "?"
            waiting(f"another `gemini-relay setup` (pid {holder}) is writing; waiting for it to finish")
            deadline = time.monotonic() + LOCK_WAIT
            while not _try(fd):
                if time.monotonic() > deadline:
                    raise LockBusy(f"another `gemini-relay setup` (pid {holder}) held {LOCK_NAME} for {LOCK_WAIT:g}s")
                time.sleep(_POLL)  # flock has no timeout of its own
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        os.close(fd)  # releases the lock


def _try(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True
