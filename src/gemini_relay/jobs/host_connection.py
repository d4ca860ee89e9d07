"""The server's side of the relay host: reach it (starting it, or replacing one of another version) and talk to it on
kept connections. RunFollower (jobs/follower.py) runs jobs through it.

A server that dies loses nothing (the run goes on in the host and stays collectable); an MCP cancel from a live server
cancels the run; a host that dies leaves its jobs `interrupted` (it is their recorded supervisor), and the next call
starts a new one.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
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
from gemini_relay.jobs.host_spawn import reap_started, spawn_host
from gemini_relay.jobs.protocol import (
    MAX_LINE,
    PROTOCOL,
    Channel,
    HostLost,
    HostSuperseded,
    HostUnresponsive,
    HostUntrusted,
    check_peer,
    check_private_dir,
    encode_line,
    is_newer,
    log_path,
    request_line,
    socket_address,
    socket_path,
)
from gemini_relay.log import logger

START_TIMEOUT = 15.0  # a host's start: Python plus the backend registry
# Kept channels: one, so an idle server holds one connection to its host (the host serves MAX_CONNECTIONS in all);
# the other calls of a burst each pay a connect and a hello (a local round trip) for their own.
KEPT_CHANNELS = 1
ATTEMPTS = 3  # a request goes to at most this many connections (a kept one found closed, a draining host's)


class HostMismatch(Exception):
    def __init__(self, version: str, protocol: int) -> None:
        super().__init__(f"relay host {version} (protocol {protocol})")
        self.version = version
        self.protocol = protocol

    @property
    def newer(self) -> bool:
        """The host is of a newer relay than this server: it is never replaced from here."""
        return is_newer(self.protocol, self.version, than_protocol=PROTOCOL, than_version=__version__)


class HostConnection:
    """How this server reaches the host of its state dir."""

    def __init__(self, settings: Settings, *, path: Path | None = None) -> None:
        """`path`: the socket of a host this server runs itself (GEMINI_RELAY_HOST=off), which is never started
        or replaced from here; default: the state dir's shared host, started on demand."""
        self.settings = settings
        self.path = path or socket_path(settings.state_dir)
        self._shared = path is None
        self._starting = threading.Lock()
        # Greeted channels (with their event loop) kept between runs: at most KEPT_CHANNELS, so a burst of calls
        # leaves one open connection per idle server, not one per call of the burst.
        self._channels: list[tuple[object, Channel]] = []

    # --- blocking: where the Runner protocol is synchronous (create, run by the engine in a worker thread) ---

    def request(self, message: dict[str, Any], *, start: bool = True) -> dict[str, Any]:
        """One request, one reply, on a connection of its own, starting the host if needed (unless `start` is False:
        then OSError). A host that began draining meanwhile is replaced and asked again. Only the rare calls are
        blocking (a prewarm, an abandon): a server keeps no blocking connection, so an idle one holds at most the
        one kept channel (below).

        Raises:
            InputError: the request is past the host's line limit (nothing was sent).
            HostLost: the host hung up before answering.
            HostUnresponsive: it did not answer within the bound.
            OSError: no host was there and `start` is False.
        """
        line = request_line(message)
        for _ in range(ATTEMPTS):
            sock = self.ensure() if start else self._greet()
            with sock:
                try:
                    with sock.makefile("rwb") as stream:
                        stream.write(line)
                        stream.flush()
                        reply = _read(stream)
                except TimeoutError:
                    raise HostUnresponsive(self.timeout) from None
                except (OSError, ValueError) as exc:
                    raise HostLost(str(exc)) from None
            if reply.get("error", {}).get("kind") != "draining":
                return reply
            time.sleep(0.05)  # the draining host is handing over its socket and lock
        raise HostLost("it kept draining")

    @property
    def timeout(self) -> float:
        """How long a request waits for the host's answer (GEMINI_RELAY_HOST_TIMEOUT)."""
        return self.settings.host_timeout_seconds

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
            reap_started()
            try:
                return self._greet()
            except HostMismatch as exc:
                if exc.newer:
                    raise HostSuperseded(exc.version, exc.protocol) from None
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
        sock.settimeout(self.timeout)
        try:
            with socket_address(self.path) as address:
                sock.connect(address)
            check_peer(sock, self.path)
            stream = sock.makefile("rwb")
            stream.write(encode_line(_hello()))
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
            sock.settimeout(self.timeout)
            with sock, sock.makefile("rwb") as stream:
                with socket_address(self.path) as address:
                    sock.connect(address)
                for message in (_hello(), {"op": "drain"}):
                    stream.write(encode_line(message))
                    stream.flush()
                    _read(stream)

    def _start(self) -> socket.socket:
        spawn_host(self.settings)
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            try:
                return self._greet()
            except HostMismatch as exc:
                if exc.newer:  # a newer server started its host meanwhile: it serves, this one defers
                    raise HostSuperseded(exc.version, exc.protocol) from None
                self._drain()  # another server started an old one meanwhile: unlikely, but never talk to it
            except OSError:
                pass
            reap_started()  # the host's starter exits as the host detaches
            if time.monotonic() > deadline:
                where = log_path(self.settings.state_dir)
                raise BackendUnavailable(
                    f"The relay host did not start within {START_TIMEOUT:g}s (see {where}); "
                    "set GEMINI_RELAY_HOST=off to run without it."
                )
            time.sleep(0.02)  # waiting for the socket to accept: connect is the only signal there is

    # --- async: the run's stream ------------------------------------------------------------------------------

    async def open(self) -> Channel:
        """A greeted channel to the host (started first when it is not there).

        Raises:
            HostLost: the host hung up while greeting (it was killed, or is exiting).
            BackendUnavailable: no host could be started.
        """
        lost = HostLost("no attempt made")
        for _ in range(ATTEMPTS):
            try:
                stream = await self._connect()
            except OSError:
                await self._ensure()
                try:
                    stream = await self._connect()
                except OSError as exc:
                    raise HostLost(f"no relay host at {self.path}: {exc}") from None
            channel = Channel(stream)
            try:
                reply = await self.exchange(channel, encode_line(_hello()), fresh=True)
            except HostLost as exc:  # a host exiting (idle, drained) as we connected: the next try finds its heir
                lost = exc
                continue
            if reply.get("ok"):
                return channel
            await channel.aclose()
            await self._ensure()  # replaces the mismatched host
            lost = HostLost("a host of another version kept answering")
        raise lost

    async def _ensure(self) -> None:
        """`ensure` in a worker thread, abandoned when the call's bound runs out (its socket has its own timeout)."""
        sock = await anyio.to_thread.run_sync(self.ensure, abandon_on_cancel=True)
        sock.close()

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

    async def exchange(self, channel: Channel, line: bytes, *, fresh: bool, timeout: float | None = None) -> Any:
        """Send `line` and read the reply within `timeout` (default: the host's bound); on any failure the channel
        is closed (it is mid-message). Returns None for a kept (not `fresh`) channel the host had closed.

        Raises:
            HostLost: a `fresh` channel's host hung up.
            HostUnresponsive: no reply within the bound.
        """
        bound = self.timeout if timeout is None else timeout
        with anyio.move_on_after(bound) as scope:
            try:
                await channel.send_line(line)
                return await channel.receive()
            except BaseException as exc:  # lost, timed out or cancelled: the channel is mid-message
                with anyio.CancelScope(shield=True):
                    await channel.aclose()
                if not isinstance(exc, LOST):
                    raise
                if fresh:
                    raise HostLost(f"it hung up: {exc!r}") from None
                return None
        assert scope.cancelled_caught
        raise HostUnresponsive(bound)

    async def call(self, message: dict[str, Any], *, timeout: float | None = None) -> dict[str, Any]:
        """One request on a channel of its own, answered within `timeout` (default: the host's bound).

        Raises:
            HostLost, HostUnresponsive: as `arequest`.
        """
        line = request_line(message)
        channel = await self.open()
        reply: dict[str, Any] = await self.exchange(channel, line, fresh=True, timeout=timeout)
        with anyio.CancelScope(shield=True), contextlib.suppress(*LOST):
            await channel.aclose()
        return reply

    async def arequest(self, message: dict[str, Any]) -> dict[str, Any]:
        """`request`, awaited on a kept channel, answered within the host's bound (a host's start is bounded apart).

        A kept channel found closed means its host went away: every kept channel is dropped at once (they were all
        to that host) and the request goes on a new one (to a new host, started if need be). A draining host is
        replaced the same way.

        Raises:
            InputError: the request is past the host's line limit (nothing was sent).
            HostLost: the host hung up before answering on a new channel too.
            HostUnresponsive: no answer within GEMINI_RELAY_HOST_TIMEOUT.
            BackendUnavailable, StoreUnwritable: no host could be started.
        """
        line = request_line(message)
        for _ in range(ATTEMPTS):
            channel, reused = await self.checkout()
            reply: dict[str, Any] | None = await self.exchange(channel, line, fresh=not reused)
            if reply is None:
                await self.drop_kept()
                continue
            if reply.get("error", {}).get("kind") != "draining":
                await self.checkin(channel)
                return reply
            await channel.aclose()
            await self.drop_kept()
            await anyio.sleep(0.05)  # the draining host is handing over its socket and lock
        raise HostLost("it kept draining")

    async def checkout(self) -> tuple[Channel, bool]:
        """A greeted channel: a kept one (True: the host may have closed it since) or a new one (False)."""
        loop = anyio.lowlevel.current_token()
        for index, (owner, channel) in enumerate(self._channels):
            if owner == loop:  # a channel is bound to the event loop that opened it
                del self._channels[index]
                return channel, True
        return await self.open(), False

    async def drop_kept(self) -> None:
        """Close the kept channels of this event loop: one found closed says their host is gone."""
        loop = anyio.lowlevel.current_token()
        dropped = [channel for owner, channel in self._channels if owner == loop]
        self._channels = [(owner, channel) for owner, channel in self._channels if owner != loop]
        with anyio.CancelScope(shield=True):
            for channel in dropped:
                with contextlib.suppress(*LOST):
                    await channel.aclose()

    async def aclose(self) -> None:
        """Close the kept connections (the server is done with the host; its runs go on there)."""
        channels, self._channels = self._channels, []
        with anyio.CancelScope(shield=True):
            for _owner, channel in channels:
                with contextlib.suppress(*LOST):
                    await channel.aclose()

    async def checkin(self, channel: Channel) -> None:
        """Keep a channel whose last run ended cleanly (the host reads its next request on it)."""
        if len(self._channels) < KEPT_CHANNELS:
            self._channels.append((anyio.lowlevel.current_token(), channel))
            return
        with anyio.CancelScope(shield=True), contextlib.suppress(*LOST):
            await channel.aclose()


LOST = (anyio.EndOfStream, anyio.IncompleteRead, anyio.BrokenResourceError, anyio.ClosedResourceError, OSError,
         ValueError)  # fmt: skip


def _hello() -> dict[str, Any]:
    return {"op": "hello", "protocol": PROTOCOL, "version": __version__, "pid": os.getpid()}


def _read(stream: Any) -> dict[str, Any]:
    line = stream.readline(MAX_LINE)
    if not line:
        raise OSError("the relay host closed the connection")
    data = json.loads(line)
    if not isinstance(data, dict):
        raise ValueError("a host message must be a JSON object")
    return data  # pyright: ignore[reportUnknownVariableType]


__all__ = ["LOST", "HostConnection", "HostMismatch"]
