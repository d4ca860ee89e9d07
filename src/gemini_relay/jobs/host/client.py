"""The server's side of the relay host: reach it (starting it, or replacing one of another version) and talk to it on
kept connections. HostRunner (jobs/host/attach.py) runs jobs through it.

A server that dies loses nothing (the run goes on in the host and stays collectable); an MCP cancel from a live server
cancels the run; a host that dies leaves its jobs `interrupted` (it is their recorded supervisor), and the next call
starts a new one.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
from anyio.abc import SocketAttribute, SocketStream

from gemini_relay import __version__
from gemini_relay.config import Settings
from gemini_relay.errors import BackendUnavailable
from gemini_relay.jobs.host.wire import (
    MAX_LINE,
    PROTOCOL,
    Channel,
    HostUntrusted,
    check_peer,
    check_private_dir,
    host_dir,
    log_path,
    socket_address,
    socket_path,
)
from gemini_relay.jobs.store.base import StoreUnwritable
from gemini_relay.log import logger

START_TIMEOUT = 15.0  # a host's start: Python plus the backend registry
REQUEST_TIMEOUT = 30.0  # a create is a few store writes; past this the host is stuck
LOG_KEEP_BYTES = 5 * 1024 * 1024
IDLE_CONNECTIONS = 8  # kept connections of each kind: enough for a burst of concurrent calls


# Hosts this process started, by any client (the stdio front's early prewarm has its own): reaped on the next start.
_STARTED: list[subprocess.Popen[bytes]] = []


class HostMismatch(Exception):
    def __init__(self, version: str, protocol: int) -> None:
        super().__init__(f"relay host {version} (protocol {protocol})")


class HostClient:
    """How this server reaches the host of its state dir."""

    def __init__(self, settings: Settings, *, path: Path | None = None) -> None:
        """`path`: the socket of a host this server runs itself (GEMINI_RELAY_HOST=off), which is never started
        or replaced from here; default: the state dir's shared host, started on demand."""
        self.settings = settings
        self.path = path or socket_path(settings.state_dir)
        self._shared = path is None
        self._starting = threading.Lock()
        self._idle: list[socket.socket] = []  # greeted blocking connections, kept between requests
        self._idle_lock = threading.Lock()
        self._channels: list[tuple[object, Channel]] = []  # greeted channels (with their event loop), kept between runs

    # --- blocking: where the Runner protocol is synchronous (create, run by the engine in a worker thread) ---

    def request(self, message: dict[str, Any], *, start: bool = True) -> dict[str, Any]:
        """One request, one reply, starting the host if needed (unless `start` is False: then OSError). A host
        that began draining meanwhile is replaced and asked again.

        Greeted connections are kept for the next request: a connect and a hello cost a warm call a round trip. A
        kept one the host has closed since (it exited idle, or drained) is replaced by a fresh one."""
        reply: dict[str, Any] = {}
        for _ in range(3):
            sock, reused = self._checkout(start)
            try:
                with sock.makefile("rwb") as stream:
                    stream.write(_line(message))
                    stream.flush()
                    reply = _read(stream)
            except (OSError, ValueError):
                sock.close()
                if reused:
                    continue
                raise
            if reply.get("error", {}).get("kind") != "draining":
                self._checkin(sock)
                return reply
            sock.close()
            time.sleep(0.05)  # the draining host is handing over its socket and lock
        return reply

    def _checkout(self, start: bool) -> tuple[socket.socket, bool]:
        with self._idle_lock:
            if self._idle:
                return self._idle.pop(), True
        return (self.ensure() if start else self._greet()), False

    def _checkin(self, sock: socket.socket) -> None:
        with self._idle_lock:
            if len(self._idle) < IDLE_CONNECTIONS:
                self._idle.append(sock)
                return
        sock.close()

    def ensure(self) -> socket.socket:
        """A connected, greeted socket to a host of this version: the running one, or one started now (after asking
        a host of another version to drain)."""
        try:
            return self._greet()
        except (HostMismatch, OSError):
            if not self._shared:
                raise
        # Creates run in worker threads: many calls may find no host at once, and only one of them starts it.
        with self._starting:
            self._reap()
            try:
                return self._greet()
            except HostMismatch as exc:
                logger.info("Replacing the %s: asking it to drain", exc)
                self._drain()
            except OSError:
                pass
            return self._start()

    def _check_dirs(self) -> None:
        """The state dir and the host dir must be this user's alone before anything is sent into them (a host of
        another user there would receive the server's whole environment, API keys included)."""
        check_private_dir(self.settings.state_dir, sticky_ok=True)
        check_private_dir(self.path.parent)

    def _greet(self) -> socket.socket:
        self._check_dirs()
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(REQUEST_TIMEOUT)
        try:
            with socket_address(self.path) as address:
                sock.connect(address)
            check_peer(sock, self.path)
            stream = sock.makefile("rwb")
            stream.write(_line(_hello()))
            stream.flush()
            reply = _read(stream)
            stream.close()
        except HostUntrusted:
            sock.close()
            raise
        except (OSError, ValueError) as exc:
            sock.close()
            raise OSError(f"no relay host at {self.path}: {exc}") from exc
        if not reply.get("ok"):
            sock.close()
            raise HostMismatch(str(reply.get("version")), int(reply.get("protocol") or 0))
        return sock

    def _drain(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.settimeout(REQUEST_TIMEOUT)
            with sock, sock.makefile("rwb") as stream:
                with socket_address(self.path) as address:
                    sock.connect(address)
                for message in (_hello(), {"op": "drain"}):
                    stream.write(_line(message))
                    stream.flush()
                    _read(stream)

    def _start(self) -> socket.socket:
        directory = host_dir(self.settings.state_dir)
        try:
            directory.mkdir(parents=True, exist_ok=True, mode=0o700)
            _rotate(log_path(self.settings.state_dir))
            log = log_path(self.settings.state_dir).open("ab")
        except OSError as exc:  # a full or read-only state dir: say so, not "internal error"
            raise StoreUnwritable(self.settings.state_dir, exc) from exc
        with log:
            child = subprocess.Popen(
                [sys.executable, "-m", "gemini_relay", "host"],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                cwd=directory,
                env=dict(self.settings.env),
                start_new_session=True,
                close_fds=True,
            )
        _STARTED.append(child)
        logger.info("Started the relay host (pid %d)", child.pid)
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            try:
                return self._greet()
            except HostMismatch:
                self._drain()  # another server started an old one meanwhile: unlikely, but never talk to it
            except OSError:
                pass
            if time.monotonic() > deadline:
                where = log_path(self.settings.state_dir)
                raise BackendUnavailable(
                    f"The relay host did not start within {START_TIMEOUT:g}s (see {where}); "
                    "set GEMINI_RELAY_HOST=off to run without it."
                )
            time.sleep(0.02)  # waiting for the socket to accept: connect is the only signal there is

    @staticmethod
    def _reap() -> None:
        _STARTED[:] = [c for c in _STARTED if c.poll() is None]

    # --- async: the run's stream ------------------------------------------------------------------------------

    async def open(self) -> Channel:
        """A greeted channel to the host (started first when it is not there)."""
        try:
            stream = await self._connect()
        except OSError:
            sock = await anyio.to_thread.run_sync(self.ensure)
            sock.close()
            stream = await self._connect()
        channel = Channel(stream)
        try:
            await channel.send(_hello())
            reply = await channel.receive()
        except BaseException:  # failed or cancelled mid-hello: the connection is closed, the error goes on
            with anyio.CancelScope(shield=True):
                await channel.aclose()
            raise
        if not reply.get("ok"):
            await channel.aclose()
            sock = await anyio.to_thread.run_sync(self.ensure)  # replaces the mismatched host
            sock.close()
            return await self.open()
        return channel

    async def _connect(self) -> SocketStream:
        self._check_dirs()
        with socket_address(self.path) as address:
            stream = await anyio.connect_unix(address)
        try:
            check_peer(stream.extra(SocketAttribute.raw_socket), self.path)
        except HostUntrusted:
            await stream.aclose()
            raise
        return stream

    async def call(self, message: dict[str, Any]) -> dict[str, Any]:
        channel = await self.open()
        try:
            await channel.send(message)
            return await channel.receive()
        finally:
            await channel.aclose()

    async def arequest(self, message: dict[str, Any]) -> dict[str, Any]:
        """`request`, awaited on a kept channel (a draining host is replaced and asked again)."""
        reply: dict[str, Any] = {}
        for _ in range(3):
            channel, reused = await self.checkout()
            try:
                await channel.send(message)
                reply = await channel.receive()
            except LOST:
                await channel.aclose()
                if reused:
                    continue
                raise OSError("the relay host hung up") from None
            if reply.get("error", {}).get("kind") != "draining":
                await self.checkin(channel)
                return reply
            await channel.aclose()
            await anyio.sleep(0.05)  # the draining host is handing over its socket and lock
        return reply

    async def checkout(self) -> tuple[Channel, bool]:
        """A greeted channel: a kept one (True: the host may have closed it since) or a new one (False)."""
        loop = anyio.lowlevel.current_token()
        while self._channels:
            owner, channel = self._channels.pop()
            if owner == loop:  # a channel is bound to the event loop that opened it
                return channel, True
        return await self.open(), False

    def close_idle(self) -> None:
        """Close the kept blocking connections."""
        with self._idle_lock:
            idle, self._idle = self._idle, []
        for sock in idle:
            sock.close()

    async def aclose(self) -> None:
        """Close the kept connections (the server is done with the host; its runs go on there)."""
        self.close_idle()
        channels, self._channels = self._channels, []
        with anyio.CancelScope(shield=True):
            for _owner, channel in channels:
                with contextlib.suppress(*LOST):
                    await channel.aclose()

    async def checkin(self, channel: Channel) -> None:
        """Keep a channel whose last run ended cleanly (the host reads its next request on it)."""
        if len(self._channels) < IDLE_CONNECTIONS:
            self._channels.append((anyio.lowlevel.current_token(), channel))
            return
        with anyio.CancelScope(shield=True):
            await channel.aclose()


def prewarm_message(settings: Settings) -> dict[str, Any]:
    """Have the host boot the warm processes of a server with these settings (it answers at once)."""
    return {"op": "prewarm", "env": dict(settings.env), "cwd": str(settings.project_root)}


def prewarm_early(settings: Settings) -> None:
    """Start the shared host (if need be) and have it boot this server's warm CLI now. The stdio front calls this
    in a thread of its own as the process starts: the CLI's boot (~1.5 s) then runs beside the SDK's import (~1 s)
    instead of after it, and a first call that comes at once finds the CLI (nearly) ready. Best effort: the server's
    own warm-up asks again, and a first call reports any failure properly."""
    client = HostClient(settings)
    try:
        client.request(prewarm_message(settings))
    except (OSError, ValueError, HostMismatch, BackendUnavailable, StoreUnwritable) as exc:
        logger.info("Early relay host prewarm skipped: %s", exc)
    finally:
        client.close_idle()


LOST = (anyio.EndOfStream, anyio.IncompleteRead, anyio.BrokenResourceError, anyio.ClosedResourceError, OSError,
         ValueError)  # fmt: skip


def _rotate(log: Path) -> None:
    """Each host appends to host.log; past LOG_KEEP_BYTES it becomes host.log.1 (one generation kept)."""
    with contextlib.suppress(OSError):
        if log.stat().st_size > LOG_KEEP_BYTES:
            log.replace(log.with_name(log.name + ".1"))


def _hello() -> dict[str, Any]:
    return {"op": "hello", "protocol": PROTOCOL, "version": __version__, "pid": os.getpid()}


def _line(message: dict[str, Any]) -> bytes:
    return json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"


def _read(stream: Any) -> dict[str, Any]:
    line = stream.readline(MAX_LINE)
    if not line:
        raise OSError("the relay host closed the connection")
    data = json.loads(line)
    if not isinstance(data, dict):
        raise ValueError("a host message must be a JSON object")
    return data  # pyright: ignore[reportUnknownVariableType]


__all__ = ["LOST", "HostClient", "HostMismatch", "prewarm_early", "prewarm_message"]
