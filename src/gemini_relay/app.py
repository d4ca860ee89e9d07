"""Assembling the server's dependencies from the settings: the backend registry, the job store, and the one way a
run is run — created in and streamed from the relay host's executor (the user's shared host, started on demand, or
with GEMINI_RELAY_HOST=off the same executor inside this server), reached through a RunFollower.

A server started by an MCP client always comes up (explained_deps): with a configuration error it serves anyway,
says what is wrong in its instructions, in gemini-doctor and in the answer to every other call, and runs nothing —
a client shows that reason, where a process that exited before `initialize` shows only "connection closed".
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from pathlib import Path

import anyio

from gemini_relay.backends.backend_registry import BackendRegistry
from gemini_relay.backends.base import Backend
from gemini_relay.config import Settings
from gemini_relay.core.vocabulary import BackendName
from gemini_relay.errors import ConfigError
from gemini_relay.jobs.follower import Jobs, RunFollower
from gemini_relay.jobs.host_connection import HostConnection
from gemini_relay.jobs.protocol import host_dir
from gemini_relay.jobs.store.file_store import FileJobStore
from gemini_relay.relay_host.host import RelayHost
from gemini_relay.tools.common.context import Deps
from gemini_relay.tools.registry import check_allowlist

Overrides = Mapping[BackendName, Backend] | None


def build_deps(settings: Settings, *, backends: Overrides = None) -> Deps:
    """Raises ConfigError for settings that must fail fast (an explicit AGY_CLI_PATH that is not executable,
    an unusable state dir). `backends` replaces the named backends (tests: a scripted backend; it reaches the
    executor only when that runs in this process, GEMINI_RELAY_HOST=off)."""
    check_allowlist(settings)
    registry = BackendRegistry(settings, overrides=backends, warm_here=False)  # the executor owns warm pools
    registry.validate_config()
    return _assemble(settings, registry, _store(settings), backends)


def explained_deps(environ: Mapping[str, str], *, cwd: Path | None = None, backends: Overrides = None) -> Deps:
    """The deps of a server that starts whatever its environment says. Each configuration error becomes one of
    `Deps.problems` (naming the variable and what it must be) and its variable is left out, so the rest is read as
    if it were unset; with any problem no run is made (server/relay.py refuses every call but gemini-doctor).

    Raises:
        ConfigError: an error that names no variable to leave out (none is known today).
    """
    env = dict(environ)
    problems: list[str] = []
    left_out: dict[str, str] = {}
    while True:
        try:
            settings = Settings.from_env(env, cwd=cwd)
            check_allowlist(settings)
            refused = left_out.get("GEMINI_MCP_BACKEND")  # the automatic choice then says it, not "unset"
            registry = BackendRegistry(settings, overrides=backends, warm_here=False, refused_choice=refused)
            registry.validate_config()
            break
        except ConfigError as exc:
            if exc.variable is None or exc.variable not in env:
                raise
            problems.append(str(exc))
            left_out[exc.variable] = env.pop(exc.variable)
    try:
        store = _store(settings)
    except ConfigError as exc:
        problems.append(str(exc))
        # The store must exist for the server's objects to; this one holds nothing (no run is made) and goes at exit.
        scratch = tempfile.mkdtemp(prefix="gemini-relay-unusable-state-")
        atexit.register(shutil.rmtree, scratch, ignore_errors=True)
        settings = replace(settings, state_dir=Path(scratch), host=False)
        store = FileJobStore(settings.state_dir)
    if not problems:
        return _assemble(settings, registry, store, backends)
    # Nothing that would run or adopt a job: no relay host is reached, no job store is offered to tasks or the page.
    client = HostConnection(settings)
    jobs = Jobs(store, kill_grace=settings.kill_grace, client=client)
    runs = RunFollower(registry.backends, client, jobs, store)
    return Deps(settings=settings, runs=runs, registry=registry, problems=tuple(problems))


def _store(settings: Settings) -> FileJobStore:
    try:
        return FileJobStore(settings.state_dir)
    except OSError as exc:
        raise ConfigError(
            f"cannot use the state dir {settings.state_dir}: {exc.strerror}; make it writable, or set "
            "GEMINI_RELAY_STATE_DIR to a folder of yours"
        ) from exc


def _own_socket(state_dir: Path) -> Path:
    """Where a server's own host listens: the state dir's host folder, or, when that folder cannot take a socket (a
    read-only or full state dir), a private temporary folder, so a server that can still read its jobs starts
    rather than dying before initialize (the state dir's problem is reported as a configuration problem)."""
    name = f"server-{os.getpid()}.sock"
    folder = host_dir(state_dir)
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        probe, probe_path = tempfile.mkstemp(dir=folder, prefix=".probe-")
        os.close(probe)
        Path(probe_path).unlink()
        return folder / name
    except OSError:
        private = Path(tempfile.mkdtemp(prefix="gemini-relay-host-"))  # 0700, ours alone
        atexit.register(shutil.rmtree, private, ignore_errors=True)
        return private / name


OWN_HOST_START = 10.0  # a host in this process only binds its socket: past this something is wrong


@dataclass
class ServersOwnHost:
    """GEMINI_RELAY_HOST=off: the same executor, in this process, on a socket of its own; it serves while the server
    does, and its runs are cancelled when the server stops."""

    host: RelayHost

    @asynccontextmanager
    async def serving(self) -> AsyncIterator[None]:
        async with anyio.create_task_group() as tg:
            tg.start_soon(self.host.serve)
            with anyio.fail_after(OWN_HOST_START):
                await self.host.listening.wait()
            try:
                yield
            finally:
                self.host.shutdown("was cancelled (the server is shutting down)")


def _assemble(settings: Settings, registry: BackendRegistry, store: FileJobStore, backends: Overrides) -> Deps:
    own_host: ServersOwnHost | None = None
    if settings.host:
        client = HostConnection(settings)
    else:
        path = _own_socket(settings.state_dir)
        own_host = ServersOwnHost(RelayHost(settings, None, signals=False, socket_at=path, overrides=backends))
        client = HostConnection(settings, path=path)
    jobs = Jobs(store, kill_grace=settings.kill_grace, client=client)
    runs = RunFollower(registry.backends, client, jobs, store)
    return Deps(settings=settings, runs=runs, registry=registry, jobs=jobs, own_host=own_host)
