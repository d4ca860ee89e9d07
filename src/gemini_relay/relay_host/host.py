"""`gemini-relay host`: one relay host per user (per state dir), started on demand by the first server that needs it.

It owns the RunEngine (the one cap, FIFO queue and pacing per backend for every server on the machine), the backends
(built from backends/backend_registry.BackendRegistry per distinct server environment) and the job store's writers.
Servers reach it over a Unix socket in `<state dir>/host/` (dir 0700, socket 0600, peer uid checked); nothing listens on
the network. A flock makes it one per state dir. It exits after GEMINI_RELAY_HOST_IDLE with no run and no request in
flight (servers keep idle connections open between calls; those are not work), or when asked to drain (a server of
another version replaces it).
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import SocketAttribute, SocketListener, SocketStream, TaskGroup

from gemini_relay import __version__
from gemini_relay.backends.backend_registry import BackendRegistry
from gemini_relay.backends.base import Backend
from gemini_relay.config import Settings
from gemini_relay.core.vocabulary import BackendName
from gemini_relay.jobs.engine.engine import RunEngine
from gemini_relay.jobs.protocol import (
    MAX_REQUEST_LINE,
    PROTOCOL,
    Channel,
    older_peer,
    peer_uid,
    socket_path,
)
from gemini_relay.jobs.store.file_store import FileJobStore
from gemini_relay.jobs.store.job_manager import reap_orphan_cli
from gemini_relay.jobs.store.job_status import derive_status
from gemini_relay.jobs.store.job_store import JobNotFound
from gemini_relay.log import logger
from gemini_relay.relay_host.door import listen, take_host_lock
from gemini_relay.relay_host.executor import JobExecutor
from gemini_relay.relay_host.handover import hold_for, predecessor_jobs
from gemini_relay.relay_host.job_service import JobService
from gemini_relay.relay_host.warm_pools import WarmPools

STREAM_SETTLE = 5.0  # after the last run of a draining host: time for its results to reach their servers
CANCEL_POLL = 0.25  # a `cancel` file written by any server (gemini-cancel) reaches the run this fast
MAX_CONNECTIONS = 256  # servers keep a few connections each; past this a new one is closed at once
ACCEPT_BACKOFF = 0.1  # out of descriptors (EMFILE): the accept loop waits this long and goes on, runs unharmed


class RelayHost:
    """The relay host's lifecycle and its socket: it listens, serves each server's connection and hands its requests
    to the job operations (JobService); it drains for a successor, idles out, and reaps what a killed host left."""

    def __init__(
        self,
        settings: Settings,
        lock_fd: int | None,
        *,
        allowed_uid: int | None = None,
        signals: bool = True,
        socket_at: Path | None = None,
        overrides: Mapping[BackendName, Backend] | None = None,
    ) -> None:
        """`allowed_uid`: the only peer uid served (default: ours). `signals=False` leaves SIGTERM to the caller (a
        host run inside a server with GEMINI_RELAY_HOST=off, or in tests). `socket_at`: where it listens (default:
        the state dir's shared socket; a server's own host listens on a private one, holds no lock, never idles
        out). `overrides`: ready-made backends for every registry (tests: a scripted backend, no process)."""
        self.settings = settings
        self._allowed_uid = os.getuid() if allowed_uid is None else allowed_uid
        self._signals = signals
        self._socket = socket_at or socket_path(settings.state_dir)
        self._private = socket_at is not None
        self._overrides = dict(overrides or {})
        self.listening = anyio.Event()
        self.store = FileJobStore(settings.state_dir)
        self.runner = JobExecutor(self.store, kill_grace=settings.kill_grace)
        own = BackendRegistry(settings, overrides=self._overrides, warm_here=False)
        self.engine = RunEngine(
            own.backends, max_concurrent=settings.max_concurrent, runner=self.runner, pacing=settings.pacing()
        )
        self.registries = WarmPools(self._overrides)
        self.jobs = JobService(settings, self.store, self.runner, self.engine, self.registries)
        self._lock_fd: int | None = lock_fd
        self._connections = 0
        self._refused = 0  # connections refused (over the cap, or no descriptor left)
        self._requests = 0  # in flight: servers keep idle connections open between calls, which is not work
        self._last_busy = time.monotonic()
        self._stop = anyio.Event()
        self._listener: SocketListener | None = None
        self._connections_tg: TaskGroup | None = None

    # --- lifecycle ----------------------------------------------------------------------------------------------

    async def serve(self) -> None:
        path = self._socket
        listener = self._listener = await listen(path)
        self.listening.set()
        logger.info("gemini-relay host %s (protocol %d) listening on %s", __version__, PROTOCOL, path)
        async with anyio.create_task_group() as pools, anyio.create_task_group() as connections:
            self.registries.serve_pools(pools)
            self._connections_tg = connections
            # Cancel files are watched until the host exits: a draining host's runs are still cancellable one by
            # one (a newer server, which cannot reach this socket any more, writes the file).
            connections.start_soon(self._watch_cancel)
            async with anyio.create_task_group() as jobs:
                self.jobs.tasks = jobs
                async with anyio.create_task_group() as tg:
                    if not self._private:  # a drained predecessor's runs count against this host's cap
                        for job_id, backend in await anyio.to_thread.run_sync(predecessor_jobs, self.store):
                            await tg.start(hold_for, self.store, self.engine, job_id, backend)
                    tg.start_soon(self._accept, listener)
                    if not self._private:  # a server's own host lives as long as its server
                        tg.start_soon(self._watch_idle)
                    if self._signals:
                        tg.start_soon(self._on_signals)
                    tg.start_soon(self._reap_orphans)
                    tg.start_soon(self.jobs.adopt_orphans)
                    await self._stop.wait()
                    tg.cancel_scope.cancel()
                self._close_listener()
                await listener.aclose()
                # Draining: the runs in flight end here, nothing new is accepted.
            self.runner.record_unrecorded()  # a last try for results the state dir refused
            with anyio.move_on_after(STREAM_SETTLE):  # attached servers get their results before we go
                while self.jobs.streams:
                    await self.jobs.streams_idle.wait()
            connections.cancel_scope.cancel()
            self.registries.close_all()
        self._release_lock()
        logger.info("gemini-relay host exits")

    def _close_listener(self) -> None:
        if self._listener is not None:
            with contextlib.suppress(FileNotFoundError):
                if self._socket.exists():
                    self._socket.unlink()
            self._listener = None

    def _release_lock(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    def shutdown(self, message_for: str) -> None:
        """Cancel every run (each fails with `<tool> <message_for>`) and exit once they have ended."""
        self.engine.cancel_all(message_for)
        self.drain()

    def drain(self) -> None:
        """Stop taking runs and give the socket and the lock to a successor; runs in flight finish here."""
        self.jobs.draining = True
        self._close_listener()
        self._release_lock()
        self._stop.set()

    @property
    def busy(self) -> bool:
        return bool(self.runner.live) or self._requests > 0

    async def _watch_idle(self) -> None:
        idle = self.settings.host_idle_seconds
        while True:
            await anyio.sleep(min(1.0, idle / 4))
            if self.busy:
                self._last_busy = time.monotonic()
            elif time.monotonic() - self._last_busy >= idle:
                logger.info("Idle for %.0fs with no run and no server: exiting", idle)
                self.drain()
                return

    async def _watch_cancel(self) -> None:
        while True:
            await anyio.sleep(CANCEL_POLL)
            self.runner.record_unrecorded()  # results a full or read-only state dir refused, once it takes them
            for job_id, live in list(self.runner.live.items()):
                if self.store.cancel_requested(job_id):
                    self.engine.cancel(job_id, f"{live.record.spec.tool} was cancelled")

    async def _on_signals(self) -> None:
        with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT, signal.SIGHUP) as signals:
            async for signum in signals:
                logger.info("Received %s: cancelling every run and exiting", signal.Signals(signum).name)
                self.engine.cancel_all("was cancelled (the relay host is shutting down)")
                self.drain()
                return

    async def _reap_orphans(self) -> None:
        """A host killed outright leaves its CLI groups running: stop those recorded in progress.json (and remove
        the environment of a job it interrupted, when an older host left it)."""
        for job_id in await anyio.to_thread.run_sync(self.store.job_ids):
            try:
                status = derive_status(self.store, job_id)
                if status.state.terminal:
                    self.store.forget_env(job_id)
            except (JobNotFound, OSError):
                continue
            await reap_orphan_cli(status)

    # --- connections --------------------------------------------------------------------------------------------

    async def _accept(self, listener: SocketListener) -> None:
        assert self._connections_tg is not None
        while True:
            try:
                stream = await listener.accept()
            except OSError as exc:  # EMFILE / ENFILE / ENOBUFS: refuse this one, keep the runs and the loop
                self._refused += 1
                if self._refused == 1 or self._refused % 1000 == 0:
                    logger.warning("Accepting a connection failed (%s); %d refused so far", exc.strerror, self._refused)
                await anyio.sleep(ACCEPT_BACKOFF)
                continue
            if self._connections >= MAX_CONNECTIONS:
                self._refused += 1
                if self._refused == 1 or self._refused % 1000 == 0:
                    logger.warning("%d connections open: refusing more (%d so far)", self._connections, self._refused)
                with contextlib.suppress(OSError, anyio.BrokenResourceError):
                    await stream.aclose()
                continue
            self._connections_tg.start_soon(self._connection, stream)

    async def _connection(self, stream: SocketStream) -> None:
        raw: socket.socket = stream.extra(SocketAttribute.raw_socket)
        if peer_uid(raw) != self._allowed_uid:
            logger.warning("Refused a connection from another user (uid %d)", peer_uid(raw))
            await stream.aclose()
            return
        channel = Channel(stream, max_line=MAX_REQUEST_LINE)
        self._connections += 1
        self._last_busy = time.monotonic()
        try:
            hello = await channel.receive()
            match = (
                hello.get("op") == "hello" and hello.get("protocol") == PROTOCOL and hello.get("version") == __version__
            )
            await channel.send({"ok": match, "protocol": PROTOCOL, "version": __version__, "pid": os.getpid()})
            older = not match and older_peer(hello)
            while True:
                request = await channel.receive()
                if not match and request.get("op") not in ("drain", "status"):
                    await channel.send({"error": {"kind": "version", "message": "protocol or version mismatch"}})
                    continue
                if older and request.get("op") == "drain":  # an older server defers: it never replaces a newer host
                    logger.info("Refused to drain for an older relay (%s)", hello.get("version"))
                    await channel.send({"draining": False, "refused": "this relay host is newer"})
                    continue
                self._requests += 1
                try:
                    await self._handle(channel, request)
                finally:
                    self._requests -= 1
                    self._last_busy = time.monotonic()
        except (anyio.EndOfStream, anyio.IncompleteRead, anyio.BrokenResourceError, anyio.ClosedResourceError):
            pass  # the server hung up (or died): its runs go on here and stay collectable
        except Exception:  # a malformed request ends its connection, never the host
            logger.exception("Dropped a connection after a malformed request")
        finally:
            self._connections -= 1
            self._last_busy = time.monotonic()
            with contextlib.suppress(anyio.BrokenResourceError, OSError):
                await stream.aclose()

    async def _handle(self, channel: Channel, request: dict[str, Any]) -> None:
        op = request.get("op")
        if op == "create":
            await channel.send(await self.jobs.create(request))
        elif op == "run":
            await self.jobs.attach(channel, str(request["job_id"]), progress=not request.get("quiet"))
        elif op == "cancel":
            await channel.send(await self.jobs.cancel(str(request["job_id"])))
        elif op == "answer":
            await channel.send(self.jobs.answer(request))
        elif op == "cancel_all":
            count = self.engine.cancel_all(str(request.get("message") or "was cancelled"))
            await channel.send({"cancelled": count})
        elif op == "status":
            await channel.send({"pid": os.getpid(), "version": __version__, "protocol": PROTOCOL,
                                "jobs": sorted(self.runner.live), "connections": self._connections,
                                "draining": self.jobs.draining})  # fmt: skip
        elif op == "prewarm":  # a server started: its registry (and its warm pools) get ready before its first call
            if not self.jobs.draining:
                self.registries.get(dict(request.get("env") or {}), Path(str(request.get("cwd") or ".")))
            await channel.send({"prewarming": self.settings.warm})
        elif op == "drain":
            self.drain()
            await channel.send({"draining": True, "jobs": sorted(self.runner.live)})
        elif op == "shutdown":
            self.shutdown(str(request.get("message") or "was cancelled (the relay host is shutting down)"))
            await channel.send({"stopping": True})
        else:
            await channel.send({"error": {"kind": "failed", "message": f"unknown op {op!r}"}})


def serve_host() -> int:
    """Entry point of `gemini-relay host`: 0 also when another host already serves this state dir."""
    settings = Settings.from_env()
    lock = take_host_lock(settings.state_dir)
    if lock is None:
        logger.info("Another relay host serves %s; this one exits", settings.state_dir)
        return 0
    host = RelayHost(settings, lock)
    anyio.run(host.serve)
    return 0
