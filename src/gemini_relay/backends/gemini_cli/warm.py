"""The gemini backend: each run warm on a `gemini --acp` process when an owner opened the pool, else cold `-p`.

The owner (the relay host's executor) calls `open()` in its own task, `prewarm()` once it serves,
and `aclose()` at shutdown; a backend nobody opened (GEMINI_RELAY_WARM=off, a server's own registry) runs cold.
A run falls back to cold `-p` when ACP is missing or fails its handshake, saying so once per process; runs the warm
path cannot honour (addDirs, sandbox, a prompt starting with `/`, which ACP mode handles as its own commands) go cold
too, so both paths give the same answer for the same request.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator
from contextlib import aclosing

from gemini_relay.backends.checks import check_spec, check_text_only
from gemini_relay.backends.gemini_cli.acp import AcpBackend, AcpHandshakeError, WarmPool
from gemini_relay.backends.gemini_cli.acp.backend import takes_literally
from gemini_relay.backends.gemini_cli.backend import GeminiCliBackend
from gemini_relay.backends.probe import ProbeCache
from gemini_relay.config import Settings
from gemini_relay.core.events import AgentEvent, RunNotice
from gemini_relay.core.spec import RunSpec
from gemini_relay.errors import BackendUnavailable, RelayError, RunFailed
from gemini_relay.log import logger

__all__ = ["GeminiBackend"]


class GeminiBackend(GeminiCliBackend):
    def __init__(self, settings: Settings, probes: ProbeCache | None = None) -> None:
        super().__init__(settings, probes)
        self._pool: WarmPool | None = None
        self._acp: AcpBackend | None = None
        self._fallback_noted = False
        self._shared = False  # the pool is another owner's (the host's one pool for every project)

    @property
    def pool(self) -> WarmPool | None:
        """The open warm pool, or None when runs are cold."""
        return self._pool

    async def open(self) -> None:
        """Enter the warm pool in the caller's task (the same task must call `aclose`); a no-op when warm is off."""
        if not self._settings.warm or self._pool is not None:
            return
        pool = self.make_pool()
        await pool.__aenter__()
        self._pool, self._acp = pool, AcpBackend(self._settings, pool)

    def pool_options(self) -> dict[str, float]:
        """How this backend's warm pool is configured; backends agreeing on it can share one pool."""
        return {
            "max_processes": self.section.warm_max,
            "idle_seconds": self._settings.warm_idle_seconds,
            "max_sessions": self.section.warm_max_sessions,
            "max_rss_bytes": self.section.warm_max_rss_mb * 1024 * 1024,
            "grace": self._settings.kill_grace,
        }

    def make_pool(self) -> WarmPool:
        """A new warm pool with this backend's options (entered by its owner)."""
        return WarmPool(
            max_processes=self.section.warm_max,
            idle_seconds=self._settings.warm_idle_seconds,
            max_sessions=self.section.warm_max_sessions,
            max_rss_bytes=self.section.warm_max_rss_mb * 1024 * 1024,
            grace=self._settings.kill_grace,
        )

    def share(self, pool: WarmPool) -> None:
        """Serve warm runs from `pool`, which another owner opened and closes (the relay host's one pool for every
        project of a user: a session carries its own cwd, so one warm CLI serves them all); `aclose` leaves it."""
        if self._settings.warm and self._pool is None:
            self._pool, self._acp, self._shared = pool, AcpBackend(self._settings, pool), True

    async def aclose(self) -> None:
        """Stop every warm child (SIGTERM to its group, grace, SIGKILL); later runs are cold. A shared pool is only
        let go: its owner closes it."""
        pool, self._pool, self._acp = self._pool, None, None
        if pool is not None and not self._shared:
            await pool.aclose()
        self._shared = False

    def keeps_warm_process(self) -> bool:
        """Whether an owner would boot a warm CLI for this backend now (warm on and the binary found)."""
        return self._settings.warm and self.locate() is not None

    async def warm_up(self) -> None:
        """Probes `--help` ahead of a call only when calls run cold: a warm call never needs it, and probing (a
        second CLI boot) while the warm CLI boots would slow the first call by as much (two node starts, 2 cores).
        A cold fallback, gemini-help and the doctor probe on demand; the result is cached on disk after that."""
        if not self.keeps_warm_process():
            await super().warm_up()

    def prewarm(self) -> None:
        """Boot one warm process in the background so the first call is warm too."""
        if self._acp is not None:
            self._acp.prewarm()

    def check(self, spec: RunSpec) -> None:
        """Images only where the run goes warm: ACP takes image blocks, the cold `-p` prompt is text alone."""
        if spec.images and self._settings.warm and _goes_warm(spec):
            check_spec(spec)
            AcpBackend.refuse_file_uris(spec)
        else:
            check_text_only(spec)

    async def run(self, spec: RunSpec) -> AsyncGenerator[AgentEvent, None]:
        acp = self._acp
        unavailable: str | None = None
        if acp is not None and _goes_warm(spec):
            # Notices come before the session: held back until the warm path is known to work, so a fallback
            # does not repeat them.
            held: list[AgentEvent] = []
            started = False
            warm = acp.run(spec)
            try:
                async with contextlib.aclosing(warm):
                    async for event in warm:
                        if not started and isinstance(event, RunNotice):
                            held.append(event)
                            continue
                        if not started:
                            started = True
                            for notice in held:
                                yield notice
                        yield event
                return
            except AcpHandshakeError as exc:
                unavailable = str(exc)
            except BackendUnavailable:
                pass  # no binary: the cold path says so with its own checks
            except RelayError:
                if not started:  # failed opening the session: the notices still belong to the run, as on cold
                    for notice in held:
                        yield notice
                raise
        if spec.images:  # a cold run would answer without having seen them
            raise RunFailed(f"images need the warm Gemini CLI, which is unavailable ({unavailable or 'not running'})")
        if unavailable is not None:
            logger.warning("ACP unavailable (%s); running cold", unavailable)
            if not self._fallback_noted:
                self._fallback_noted = True
                yield RunNotice(f"ACP unavailable: {unavailable}, running cold.")
        async with aclosing(super().run(spec)) as events:
            async for event in events:
                yield event


def _goes_warm(spec: RunSpec) -> bool:
    return not spec.add_dirs and not spec.sandbox and takes_literally(spec)
