"""The Gemini CLI backend: one `gemini --output-format stream-json` process per run, prompt on stdin."""

from __future__ import annotations

import contextlib
import math
import time
import uuid
from collections.abc import AsyncGenerator
from contextlib import aclosing
from pathlib import Path

import gemini_relay.backends.gemini_cli.surface as surface
from gemini_relay.backends.checks import check_text_only
from gemini_relay.backends.cli_run import CliRun, stream_cli, verdict
from gemini_relay.backends.gemini_cli.args import advertised_flags, build_invocation
from gemini_relay.backends.gemini_cli.auth import with_auth_fix
from gemini_relay.backends.gemini_cli.decoder import GeminiCliDecoder
from gemini_relay.backends.gemini_cli.errors import classify_exit, no_answer_after_tools
from gemini_relay.backends.gemini_cli.settings import INSTALL_HINT, NAME, GeminiCliSettings, cli_env, gemini_home
from gemini_relay.backends.gemini_cli.usage import rewind_call, with_call_usage
from gemini_relay.backends.model_names import served_notice
from gemini_relay.backends.probe import ProbeCache, ProbeResult
from gemini_relay.config import Settings
from gemini_relay.core.events import AgentEvent, RunNotice, SessionStarted
from gemini_relay.core.spec import RunSpec
from gemini_relay.errors import BackendUnavailable
from gemini_relay.log import logger
from gemini_relay.streams.transcript import Transcript

# proper-lockfile refreshes a held lock every 5 s; an older one is certainly stale.
STALE_LOCK_SECONDS = 6.0


class GeminiCliBackend:
    name = NAME
    command = "gemini"
    max_concurrent: int | None = None

    def __init__(self, settings: Settings, probes: ProbeCache | None = None) -> None:
        self._settings = settings
        self.section = GeminiCliSettings.from_env(settings.env)
        self._probes = probes or ProbeCache()
        self._running_homes: dict[Path, int] = {}

    @property
    def settings(self) -> Settings:
        return self._settings

    # --- capabilities (backends/capabilities.py) -------------------------------------------------------------

    @property
    def default_model(self) -> str | None:
        return self.section.default_model

    @property
    def search_tool(self) -> str:
        return "the google_web_search tool"

    def fresh_conversation_id(self) -> str:
        return str(uuid.uuid4())  # the CLI takes a caller-chosen --session-id

    async def warm_up(self) -> None:
        if self.locate() is not None:
            await self.help()

    # gemini-models, -conversations, -doctor and -help: answered in surface.py, bound here as methods.
    model_listing = surface.model_listing
    conversation_rows = surface.conversation_rows
    doctor_section = surface.doctor_section
    help_text = surface.help_text
    check = staticmethod(check_text_only)  # refuse what it could never run (images too), before a job exists

    def validate_config(self) -> None:
        """Nothing to check up front: a missing binary is reported by the first call that needs it."""

    def env(self) -> dict[str, str]:
        return cli_env(self._settings.env, self._settings.state_dir)

    def locate(self) -> Path | None:
        return self.section.locate(self._settings.env)

    def require_binary(self) -> Path:
        return self.section.require_binary(self._settings.env)

    async def help(self) -> ProbeResult:
        return await self._probes.get(self.require_binary(), "--help", self.env(), self._settings.project_root)

    async def version(self) -> ProbeResult:
        return await self._probes.get(self.require_binary(), "--version", self.env(), self._settings.project_root)

    async def run(self, spec: RunSpec) -> AsyncGenerator[AgentEvent, None]:
        binary = self.require_binary()
        probe = await self.help()
        flags = advertised_flags(probe)
        if probe.timed_out:
            logger.info("%s; running with the flags every supported Gemini CLI has", probe.text)
        if flags is not None and "--output-format" not in flags:
            raise BackendUnavailable(
                f"The Gemini CLI at {binary} is too old: it has no --output-format. {INSTALL_HINT}"
            )
        seen = Transcript(spec)
        inv = build_invocation(str(binary), spec, flags, default_model=self.section.default_model)
        for notice in inv.notices:
            yield seen.apply(RunNotice(notice))
        if inv.session_id:
            yield seen.apply(SessionStarted(inv.session_id))
        env = self.env()
        home = gemini_home(env)
        self._clear_stale_lock(home)
        self._running_homes[home] = self._running_homes.get(home, 0) + 1
        decoder = GeminiCliDecoder()
        run = CliRun()
        started = math.floor(time.time() * 1000) / 1000  # the recording stamps in whole milliseconds
        try:
            async with aclosing(
                stream_cli(
                    seen,
                    inv.argv,
                    env=env,
                    cwd=spec.cwd,
                    stdin=inv.stdin.encode("utf-8"),
                    decoder=decoder,
                    grace=self._settings.kill_grace,
                    install_hint=INSTALL_HINT,
                    run=run,
                )
            ) as events:
                async for event in events:
                    yield event
        finally:
            self._running_homes[home] -= 1
            if run.exit is None and inv.session_id:
                # Stopped (cancelled, timed out): the CLI's turn never ended, so its prompt stays in the recording
                # and a `--resume` would send it again with the next one. Warm's CLI drops it itself.
                rewind_call(home, inv.session_id, started)
        assert run.exit is not None
        if decoder.skipped:
            logger.info("Skipped %d non-JSON stdout line(s) of gemini", decoder.skipped)
        failure = classify_exit(run.exit.returncode, seen, run.exit.stderr, truncation=decoder.truncation())
        if failure is not None:
            logger.info("gemini exited %d (%s)", run.exit.returncode, failure.reason)
            raise with_auth_fix(failure, env, spec.cwd)
        if not seen.text.strip() and seen.tool_names:
            yield seen.apply(RunNotice(no_answer_after_tools(seen.tool_names)))
        # The CLI's per-model stats name the model that answered (a quota fallback is otherwise silent).
        fell_back = served_notice("gemini", inv.model, seen.finished.models if seen.finished else ())
        if fell_back:
            yield seen.apply(RunNotice(fell_back))
        # The recording's count, as warm reports it: stream-json's stats add the router's request and drop thoughts.
        yield await with_call_usage(verdict(seen), home, seen.session_id)

    def _clear_stale_lock(self, home: Path) -> None:
        """A crashed CLI can leave `projects.json.lock` behind; the next start then stalls 10 s waiting for it."""
        lock = home / ".gemini" / "projects.json.lock"
        try:
            age = time.time() - lock.stat().st_mtime
        except OSError:
            return
        if age > STALE_LOCK_SECONDS or (self._running_homes.get(home, 0) == 0 and age > 1.0):
            with contextlib.suppress(OSError):
                lock.rmdir()
                logger.info("Removed a stale Gemini CLI projects.json.lock")
