"""The host's door on disk: its lock (one host per state dir) and its listening socket (dir 0700, socket 0600)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import anyio
from anyio.abc import SocketListener

from gemini_relay.jobs.protocol import host_dir, lock_path, socket_address
from gemini_relay.jobs.store.locks import try_lock_file
from gemini_relay.log import logger


def take_host_lock(state_dir: Path) -> int | None:
    """The host's flock, or None while another host holds it."""
    directory = host_dir(state_dir)
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    directory.chmod(0o700)
    return try_lock_file(lock_path(state_dir))


async def listen(path: Path) -> SocketListener:
    """A Unix listener at `path`, readable and writable by us alone from its first moment (umask, then chmod).

    It is bound and listening under a private name first and then renamed into place, so whoever sees the socket
    file can connect to it: a path that exists but refuses connections would read as a dead host."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    _clear_socket_path(path)
    staging = path.with_name(f".{path.name}.{os.getpid()}")
    _clear_socket_path(staging)
    old = os.umask(0o177)
    try:
        with socket_address(staging) as address:
            listener = await anyio.create_unix_listener(address)
    finally:
        os.umask(old)
    try:
        staging.chmod(0o600)
        staging.rename(path)
    except BaseException:  # cleanup, re-raised: no half-made socket is left at the staging name
        await listener.aclose()
        staging.unlink(missing_ok=True)
        raise
    return listener


def _clear_socket_path(path: Path) -> None:
    """Make room for our socket: a dead host's socket is removed (we hold the lock, or the path is ours alone), and
    anything else found there (a directory, a file) is moved aside rather than crash the start."""
    try:
        info = path.lstat()
    except FileNotFoundError:
        return
    if stat.S_ISSOCK(info.st_mode) or stat.S_ISLNK(info.st_mode):
        path.unlink()
        return
    aside = path.with_name(f"{path.name}.not-a-socket.{os.getpid()}")
    logger.warning("%s is not a socket; moved aside to %s", path, aside)
    path.rename(aside)
