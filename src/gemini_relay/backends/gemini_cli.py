"""The Gemini CLI backend: one `gemini --output-format stream-json` process per run, prompt on stdin."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Mapping
from pathlib import Path

from gemini_relay.backends.cli import run_cli
from gemini_relay.backends.env import child_env
from gemini_relay.backends.gemini_cli_args import build_invocation
from gemini_relay.backends.gemini_cli_errors import classify_exit
from gemini_relay.backends.probe import ProbeCache, ProbeResult, locate, parse_flags
from gemini_relay.config import Settings
from gemini_relay.core.vocabulary import BackendName
from gemini_relay.errors import BackendUnavailable
from gemini_relay.jobs.models import RunRecord
from gemini_relay.log import logger
from gemini_relay.streams.gemini_cli import GeminiCliDecoder

INSTALL_HINT = (
    "Install it with `npm install -g @google/gemini-cli` (Node 20+) or set GEMINI_CLI_PATH to the gemini binary."
)
# proper-lockfile refreshes a held lock every 5 s; an older one is certainly stale.
STALE_LOCK_SECONDS = 6.0


class GeminiCliBackend:
    def __init__(self, settings: Settings, probes: ProbeCache | None = None) -> None:
        self._settings = settings
        self._probes = probes or ProbeCache()
        self._running_homes: dict[Path, int] = {}

    @property
    def name(self) -> BackendName:
        return BackendName.GEMINI

    @property
    def command(self) -> str:
        return "gemini"

    @property
    def max_concurrent(self) -> int | None:
        return None

    @property
    def settings(self) -> Settings:
        return self._settings

    def env(self) -> dict[str, str]:
        # No relaunch: the CLI's self-respawn costs ~0.5 s per call and its parent ignores SIGTERM.
        env = child_env(self._settings.env)
        env.setdefault("GEMINI_CLI_NO_RELAUNCH", "true")
        return env

    def locate(self) -> Path | None:
        return locate(self._settings.gemini_cli_path, "gemini", self._settings.env)

    def require_binary(self) -> Path:
        binary = self.locate()
        if binary is None:
            where = f"GEMINI_CLI_PATH={self._settings.gemini_cli_path}" if self._settings.gemini_cli_path else "PATH"
            raise BackendUnavailable(f"The Gemini CLI (gemini) was not found on {where}. {INSTALL_HINT}")
        return binary

    async def help(self) -> ProbeResult:
        return await self._probes.get(self.require_binary(), "--help", self.env(), self._settings.project_root)

    async def version(self) -> ProbeResult:
        return await self._probes.get(self.require_binary(), "--version", self.env(), self._settings.project_root)

    async def run(self, record: RunRecord) -> None:
        binary = self.require_binary()
        probe = await self.help()
        flags = parse_flags(probe.text) if probe.ok else None
        if flags is not None and "--output-format" not in flags:
            raise BackendUnavailable(
                f"The Gemini CLI at {binary} is too old: it has no --output-format. {INSTALL_HINT}"
            )
        spec = record.spec
        inv = build_invocation(str(binary), spec, flags, default_model=self._settings.default_model)
        for notice in inv.notices:
            record.note(notice)
        if inv.session_id:
            record.session_id = inv.session_id
        env = self.env()
        home = gemini_home(env)
        self._clear_stale_lock(home)
        self._running_homes[home] = self._running_homes.get(home, 0) + 1
        decoder = GeminiCliDecoder()
        try:
            exit_ = await run_cli(
                record,
                inv.argv,
                env=env,
                cwd=spec.cwd,
                stdin=inv.stdin.encode("utf-8"),
                decoder=decoder,
                grace=self._settings.kill_grace,
                install_hint=INSTALL_HINT,
            )
        finally:
            self._running_homes[home] -= 1
        if decoder.skipped:
            logger.info("Run %s: skipped %d non-JSON stdout line(s)", record.run_id, decoder.skipped)
        failure = classify_exit(exit_.returncode, record, exit_.stderr, truncation=decoder.truncation())
        if failure is not None:
            logger.info("Run %s: gemini exited %d (%s)", record.run_id, exit_.returncode, failure.reason)
            raise failure

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


def gemini_home(env: Mapping[str, str]) -> Path:
    """The directory holding the CLI's `.gemini` state folder."""
    return Path(env.get("GEMINI_CLI_HOME") or env.get("HOME") or Path.home()).expanduser()
