"""Assembling the server's dependencies from the settings: the backend registry, the job store, the engine."""

from __future__ import annotations

from collections.abc import Mapping

from gemini_relay.backends.base import Backend
from gemini_relay.backends.registry import BackendRegistry, RunnerKind
from gemini_relay.config import Settings
from gemini_relay.core.vocabulary import BackendName
from gemini_relay.errors import ConfigError
from gemini_relay.jobs.engine import RunEngine
from gemini_relay.jobs.fs_store import FileJobStore
from gemini_relay.jobs.manager import JobManager
from gemini_relay.jobs.runners import InlineRunner, Runner
from gemini_relay.jobs.spawner import DetachedSpawner
from gemini_relay.tools.context import Deps


def build_deps(
    settings: Settings, *, durable: bool = True, backends: Mapping[BackendName, Backend] | None = None
) -> Deps:
    """Raises ConfigError for settings that must fail fast (an explicit AGY_CLI_PATH that is not executable,
    an unusable state dir). `backends` replaces the named backends (tests: a scripted backend)."""
    registry = BackendRegistry(settings, overrides=backends)
    registry.validate_config()
    supervised: JobManager | None = None
    durable_runner: Runner | None = None
    if durable:
        try:
            store = FileJobStore(settings.state_dir)
        except OSError as exc:
            raise ConfigError(f"cannot use the state dir {settings.state_dir}: {exc.strerror}") from exc
        spawner = DetachedSpawner(store, settings.env)
        if settings.host:
            # Durable runs go to the relay host, which caps, queues and paces them for every server of this user.
            from gemini_relay.jobs.host_client import HostClient
            from gemini_relay.jobs.host_runner import HostedJobManager, HostRunner

            client = HostClient(settings)
            hosted = HostedJobManager(store, spawner, kill_grace=settings.kill_grace, client=client)
            supervised, durable_runner = hosted, HostRunner(client, hosted)
        else:
            supervised = durable_runner = JobManager(store, spawner, kill_grace=settings.kill_grace)
    inline = InlineRunner()
    runners: dict[RunnerKind, Runner] = {RunnerKind.INLINE: inline, RunnerKind.DURABLE: durable_runner or inline}
    engine = RunEngine(
        registry.backends,
        max_concurrent=settings.max_concurrent,
        runners={name: runners[entry.runner] for name, entry in registry.entries.items()},
        pacing=settings.pacing(),
        hosted=frozenset(
            name
            for name, entry in registry.entries.items()
            if settings.host and durable and entry.runner is RunnerKind.DURABLE
        ),
    )
    return Deps(settings=settings, engine=engine, registry=registry, jobs=supervised)
