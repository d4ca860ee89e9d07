"""Assembling the server's dependencies from the settings: the backend registry, the job store, and the one way a
run is run — created in and streamed from the relay host's executor (the user's shared host, started on demand, or
with GEMINI_RELAY_HOST=off the same executor inside this server), reached through a JobProxy."""

from __future__ import annotations

import os
from collections.abc import Mapping

from gemini_relay.backends.base import Backend
from gemini_relay.backends.registry import BackendRegistry
from gemini_relay.config import Settings
from gemini_relay.core.vocabulary import BackendName
from gemini_relay.errors import ConfigError
from gemini_relay.jobs.host.attach import HostedJobManager, HostRunner
from gemini_relay.jobs.host.client import HostClient
from gemini_relay.jobs.host.proxy import JobProxy
from gemini_relay.jobs.host.server import Host
from gemini_relay.jobs.host.wire import host_dir
from gemini_relay.jobs.store.files import FileJobStore
from gemini_relay.tools.common.context import Deps


def build_deps(settings: Settings, *, backends: Mapping[BackendName, Backend] | None = None) -> Deps:
    """Raises ConfigError for settings that must fail fast (an explicit AGY_CLI_PATH that is not executable,
    an unusable state dir). `backends` replaces the named backends (tests: a scripted backend; it reaches the
    executor only when that runs in this process, GEMINI_RELAY_HOST=off)."""
    registry = BackendRegistry(settings, overrides=backends, warm_here=False)  # the executor owns warm pools
    registry.validate_config()
    try:
        store = FileJobStore(settings.state_dir)
    except OSError as exc:
        raise ConfigError(f"cannot use the state dir {settings.state_dir}: {exc.strerror}") from exc
    own_host: Host | None = None
    if settings.host:
        client = HostClient(settings)
    else:
        # The same executor, in this process, on a socket of its own: it lives and dies with this server.
        path = host_dir(settings.state_dir) / f"server-{os.getpid()}.sock"
        own_host = Host(settings, None, signals=False, socket_at=path, overrides=backends)
        client = HostClient(settings, path=path)
    jobs = HostedJobManager(store, kill_grace=settings.kill_grace, client=client)
    engine = JobProxy(registry.backends, HostRunner(client, jobs), store)
    return Deps(settings=settings, engine=engine, registry=registry, jobs=jobs, own_host=own_host)
