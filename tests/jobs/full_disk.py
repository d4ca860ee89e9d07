"""A full disk, honestly and unprivileged: past RLIMIT_FSIZE the kernel refuses every write that would grow a file
(EFBIG, with SIGXFSZ ignored), as a full disk refuses it with ENOSPC. As root, chmod cannot make a directory
read-only, and a tmpfs needs a mount; this needs neither and is undone when the block ends."""

from __future__ import annotations

import contextlib
import resource
import signal
from collections.abc import Iterator


@contextlib.contextmanager
def full_disk(room: int = 0) -> Iterator[None]:
    """Every write of this process past `room` bytes of a file fails while the block runs."""
    previous = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (room, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, previous)
