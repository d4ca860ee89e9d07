"""Starting a relay host process: `python -m gemini_relay host` in its own session, stdin closed, its output in the
state dir's host.log (one old generation kept). HostConnection (host_connection.py) decides when, and greets it.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
from pathlib import Path

from gemini_relay.config import Settings
from gemini_relay.jobs.protocol import host_dir, log_path
from gemini_relay.jobs.store.job_store import StoreUnwritable
from gemini_relay.log import logger

LOG_KEEP_BYTES = 5 * 1024 * 1024

# The children this process started hosts with (the stdio front's early prewarm has its own): reaped while it waits
# for the host to listen, or on the next start.
_STARTED: list[subprocess.Popen[bytes]] = []


def spawn_host(settings: Settings) -> None:
    """Start a host for `settings`' state dir; it listens on its own (the caller waits for its socket)."""
    directory = host_dir(settings.state_dir)
    try:
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        _rotate(log_path(settings.state_dir))
        log = log_path(settings.state_dir).open("ab")
    except OSError as exc:  # a full or read-only state dir: say so, not "internal error"
        raise StoreUnwritable(settings.state_dir, exc) from exc
    with log:
        child = subprocess.Popen(
            [sys.executable, "-m", "gemini_relay", "host", "--detach"],  # not this server's child for long (cli.py)
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            cwd=directory,
            env=dict(settings.env),
            start_new_session=True,
            close_fds=True,
        )
    _STARTED.append(child)
    logger.info("Started the relay host (by pid %d, which exits as the host detaches)", child.pid)


def reap_started() -> None:
    """Collect the children this process started hosts with, once they have exited (each forks the host and exits
    at once: a host outlives its starter by design, outside its process tree)."""
    _STARTED[:] = [c for c in _STARTED if c.poll() is None]


def _rotate(log: Path) -> None:
    """Each host appends to host.log; past LOG_KEEP_BYTES it becomes host.log.1 (one generation kept)."""
    with contextlib.suppress(OSError):
        if log.stat().st_size > LOG_KEEP_BYTES:
            log.replace(log.with_name(log.name + ".1"))
