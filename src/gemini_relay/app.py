"""Assembling the server's dependencies from the settings (backends, job store, engine, backend choice)."""

from __future__ import annotations

from gemini_relay.backends.factory import build_backends
from gemini_relay.backends.registry import BackendSelector
from gemini_relay.config import Settings
from gemini_relay.errors import ConfigError
from gemini_relay.jobs.engine import RunEngine
from gemini_relay.jobs.fs_store import FileJobStore
from gemini_relay.jobs.supervised import SupervisedRunner
from gemini_relay.tools.context import Deps


def build_deps(settings: Settings, *, durable: bool = True) -> Deps:
    """Raises ConfigError for settings that must fail fast (an explicit AGY_CLI_PATH that is not executable,
    an unusable state dir)."""
    gemini, agy = build_backends(settings)
    agy.validate_config()
    runner = None
    if durable:
        try:
            store = FileJobStore(settings.state_dir)
        except OSError as exc:
            raise ConfigError(f"cannot use the state dir {settings.state_dir}: {exc.strerror}") from exc
        runner = SupervisedRunner(store, settings.env, kill_grace=settings.kill_grace)
    engine = RunEngine(
        {gemini.name: gemini, agy.name: agy},
        max_concurrent=settings.max_concurrent,
        runner=runner,
        pacing=settings.pacing(),
    )
    selector = BackendSelector(settings, agy.locate)
    return Deps(settings=settings, engine=engine, gemini=gemini, agy=agy, selector=selector, jobs=runner)
