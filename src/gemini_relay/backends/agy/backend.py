"""The agy (Antigravity CLI) backend: one `agy --output-format stream-json` process per run, one run at a time.

agy rewrites its conversation cache (last_conversations.json) without a lock on every run, so runs are serialized
(max_concurrent = 1). The binary is located on every call (one installed later is picked up), its version is gated
once per binary (floor 1.1.15), and `agy --help` decides which flags are sent.
"""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator
from contextlib import aclosing
from datetime import UTC, datetime
from pathlib import Path

import anyio

import gemini_relay.backends.agy.surface as surface
from gemini_relay.backends.agy.agy_image import SAVED_NAME_BYTES, image_prompt, save_generated_image
from gemini_relay.backends.agy.args import (
    FLOOR_CAPABILITIES,
    Capabilities,
    Invocation,
    build_invocation,
    parse_go_duration,
    parse_help,
    reduce_model,
)
from gemini_relay.backends.agy.catalogs import FALLBACK_MODELS, fetch_agents, fetch_models
from gemini_relay.backends.agy.decoder import AgyDecoder
from gemini_relay.backends.agy.errors import classify_exit, is_partial, run_notices
from gemini_relay.backends.agy.quota_cache import CACHE_SECONDS, TRUST_FLOOR, UsageCache
from gemini_relay.backends.agy.sessions import ConversationListing, agy_state_dir, list_conversations
from gemini_relay.backends.agy.settings import CHILD_ENV_KEYS, INSTALL_HINT, NAME, AgySettings
from gemini_relay.backends.agy.usage import UsageReading, group_for_model, probe_usage
from gemini_relay.backends.agy.version import AgyVersion, require_floor
from gemini_relay.backends.capabilities import ImageRequest, QuotaReport, SavedImage
from gemini_relay.backends.checks import check_text_only
from gemini_relay.backends.cli_run import CliRun, stream_cli, verdict
from gemini_relay.backends.env import child_env
from gemini_relay.backends.model_names import Catalog, served_notice
from gemini_relay.backends.probe import ProbeCache, ProbeResult, run_probe
from gemini_relay.config import Settings
from gemini_relay.core.events import AgentEvent, RunNotice, SessionStarted
from gemini_relay.core.spec import RunSpec
from gemini_relay.core.vocabulary import BackendName, QuotaLevel
from gemini_relay.errors import BackendUnavailable, ConfigError
from gemini_relay.log import logger
from gemini_relay.streams.transcript import Transcript

VERSION_TIMEOUT = 10.0  # agy-mcp's budget for `agy --version`
CATALOG_RETRY_SECONDS = 30.0  # a failed `agy models` is not re-run for every call


class AgyBackend:
    def __init__(self, settings: Settings, probes: ProbeCache | None = None, usage: UsageCache | None = None) -> None:
        self._settings = settings
        self.section = AgySettings.from_env(settings.env)
        self._probes = probes or ProbeCache()
        self._versions: dict[str, AgyVersion] = {}
        self._version_lock = anyio.Lock()
        self._catalog: Catalog | None = None
        self._catalog_at = 0.0
        self._catalog_lock = anyio.Lock()
        self._usage = usage or UsageCache()  # tests pass one on a clock of their own

    @property
    def name(self) -> BackendName:
        return NAME

    @property
    def command(self) -> str:
        return "agy"

    @property
    def max_concurrent(self) -> int | None:
        return 1

    @property
    def settings(self) -> Settings:
        return self._settings

    def validate_config(self) -> None:
        """Startup checks that must fail fast.

        Raises:
            ConfigError: AGY_CLI_PATH is set but not an executable, or AGY_PRINT_TIMEOUT is not a duration.
        """
        configured = self.section.cli_path
        if configured and self.locate() is None:
            raise ConfigError(f"AGY_CLI_PATH={configured!r} is missing or not executable", variable="AGY_CLI_PATH")
        if self.section.print_timeout:
            parse_go_duration(self.section.print_timeout)

    # --- capabilities (backends/capabilities.py) -------------------------------------------------------------

    @property
    def default_model(self) -> str | None:
        return self.section.default_model

    @property
    def search_tool(self) -> str:
        return "your web search tool"

    async def warm_up(self) -> None:
        await self.version()
        await self.help()

    def quota_low_for(self, model: str | None) -> str | None:
        reading = self.cached_usage()
        if reading is None:
            return None  # no reading young enough to trust: fail open
        now, thresholds = datetime.now(UTC), self.section.thresholds
        group = group_for_model(reading.groups, model or self.section.default_model or "gemini-default")
        if group is None or group.level(now, thresholds) is QuotaLevel.OK:
            return None
        return f"the agy quota group {group.describe(now, thresholds)}"

    def cached_quota(self) -> QuotaReport | None:
        reading = self.cached_usage()
        return None if reading is None else reading.report(datetime.now(UTC), self.section.thresholds)

    async def quota(self, max_age: float) -> QuotaReport:
        reading = await self.usage(max_age)
        if not reading.ok:
            raise BackendUnavailable(f"agy could not report its quota: {reading.error}")
        return reading.report(datetime.now(UTC), self.section.thresholds)

    async def refresh_quota(self) -> None:
        interval = self.section.usage_interval
        if interval is not None:
            await self._usage.refresh(self._probe_usage, interval)

    # gemini-models, -conversations, -doctor and -help: answered in surface.py, bound here as methods.
    model_listing = surface.model_listing
    conversation_rows = surface.conversation_rows
    doctor_section = surface.doctor_section
    help_text = surface.help_text
    check = staticmethod(check_text_only)  # refuse what it could never run (images too), before a job exists

    def env(self) -> dict[str, str]:
        extra = {key: self._settings.env[key] for key in CHILD_ENV_KEYS if key in self._settings.env}
        return child_env(self._settings.env, extra)

    def state_dir(self) -> Path:
        return agy_state_dir(self.env())

    def locate(self) -> Path | None:
        return self.section.locate(self._settings.env)

    def require_binary(self) -> Path:
        binary = self.locate()
        if binary is None:
            where = f"AGY_CLI_PATH={self.section.cli_path}" if self.section.cli_path else "PATH"
            raise BackendUnavailable(f"agy (the Antigravity CLI) was not found on {where}. {INSTALL_HINT}")
        return binary

    async def version(self, binary: Path | None = None) -> AgyVersion:
        """The gated version; only success is cached (per binary), so a fixed install is picked up.

        Raises:
            BackendUnavailable: agy is missing, cannot run, or is older than 1.1.15.
        """
        binary = binary or self.require_binary()
        async with self._version_lock:
            cached = self._versions.get(str(binary))
            if cached is not None:
                return cached
            # Exit status is ignored: --version is not in agy's --help, so only the text is a contract.
            result = await run_probe([str(binary), "--version"], self.env(), self._cwd(), timeout=VERSION_TIMEOUT)
            if result.returncode is None:
                raise BackendUnavailable(f"`{binary} --version` failed: {result.text.strip()[:300]}. {INSTALL_HINT}")
            version = require_floor(result.text, binary)
            self._versions[str(binary)] = version
            return version

    async def help(self) -> ProbeResult:
        """`agy --help`, run once per binary and cached on success (also what gemini-help shows)."""
        return await self._probes.get(self.require_binary(), "--help", self.env(), self._cwd())

    async def capabilities(self) -> Capabilities:
        probe = await self.help()
        caps = parse_help(probe.text)
        if probe.ok or "--output-format" in caps.flags:
            return caps
        logger.info("agy --help failed; assuming only the flags agy 1.1.15 guarantees")
        return FLOOR_CAPABILITIES

    async def models(self) -> Catalog:
        """The live catalog (cached for the process), or the built-in list with a notice (retried after 30 s)."""
        binary = self.require_binary()
        async with self._catalog_lock:
            cached = self._catalog
            if cached is not None and (cached.live or time.monotonic() - self._catalog_at < CATALOG_RETRY_SECONDS):
                return cached
            catalog = await fetch_models(binary, self.env(), self._cwd())
            self._catalog, self._catalog_at = catalog, time.monotonic()
            return catalog

    async def agents(self, cwd: Path | None = None) -> tuple[str, ...]:
        """Raises BackendUnavailable when agy is missing or cannot list its agents."""
        return await fetch_agents(self.require_binary(), self.env(), cwd or self._cwd())

    async def usage(self, max_age: float = CACHE_SECONDS) -> UsageReading:
        """The /usage quota probe (zero tokens), or a reading younger than `max_age`; agy's failures come back in
        the reading. Raises BackendUnavailable when agy is missing or too old."""
        binary = self.require_binary()
        await self.version(binary)
        return await self._usage.read(lambda: probe_usage(binary, self.env(), self._cwd()), max_age)

    def cached_usage(self) -> UsageReading | None:
        """The last good /usage reading while it is young enough to trust (twice the refresh interval, at least
        10 min), without probing; None otherwise (the quota guard and the `quota` field then fail open)."""
        return self._usage.trusted(max(2 * (self.section.usage_interval or 0.0), TRUST_FLOOR))

    async def _probe_usage(self) -> UsageReading:
        """The background refresh's probe: a missing or too old agy is a failed reading, not an exception."""
        try:
            binary = self.require_binary()
            await self.version(binary)
        except BackendUnavailable as exc:
            return UsageReading(error=str(exc), taken_at=time.monotonic())
        return await probe_usage(binary, self.env(), self._cwd())

    async def conversations(self, limit: int, cwd: Path | None = None) -> ConversationListing:
        state = self.state_dir()
        return await anyio.to_thread.run_sync(lambda: list_conversations(state, limit, cwd=cwd))

    @property
    def saved_name_bytes(self) -> int:
        return SAVED_NAME_BYTES

    def image_prompt(self, prompt: str, aspect_ratio: str, size: str | None) -> str:
        return image_prompt(prompt, aspect_ratio, size)

    async def save_image(self, record: Transcript, request: ImageRequest, *, since: float) -> SavedImage:
        """After a gemini-image run: copy the image agy left in the run's conversation folder (see agy_image.py)."""
        state = self.state_dir()
        return await anyio.to_thread.run_sync(
            lambda: save_generated_image(
                state_dir=state,
                conversation_id=record.session_id,
                since=since,
                response_text=record.text,
                project_root=self._settings.project_root,
                output_path=request.output_path,
                default_dir=request.default_dir,
                aspect_ratio=request.aspect_ratio,
                size=request.size,
            )
        )

    async def run(self, spec: RunSpec) -> AsyncGenerator[AgentEvent, None]:
        binary = self.require_binary()
        await self.version(binary)
        caps = await self.capabilities()
        if caps.probed and "--output-format" not in caps.flags:
            raise BackendUnavailable(f"agy at {binary} lists no --output-format in --help. {INSTALL_HINT}")
        catalog = await self._catalog_for(spec)
        inv = build_invocation(
            str(binary),
            spec,
            caps,
            default_model=self.section.default_model,
            print_timeout_override=self.section.print_timeout,
            catalog=catalog.models,
            project_rules=self.section.project_rules,
        )
        seen = Transcript(spec)
        if not caps.probed:
            yield seen.apply(
                RunNotice("`agy --help` could not be read, so only the flags every agy 1.1.15+ accepts were sent.")
            )
        for notice in inv.notices:
            yield seen.apply(RunNotice(notice))
        if inv.model:
            yield seen.apply(SessionStarted("", model=inv.model))
        decoder = AgyDecoder()
        run = CliRun()
        async with aclosing(self._execute(seen, inv, _physical(spec.cwd), decoder, run)) as events:
            async for event in events:
                yield event
        assert run.exit is not None
        exit_ = run.exit
        if decoder.skipped:
            logger.info("Skipped %d unreadable stream-json line(s) of agy", decoder.skipped)
            yield seen.apply(
                RunNotice(f"gemini-relay skipped {decoder.skipped} unreadable line(s) in agy's stream-json output.")
            )
        asked = spec.conversation_id
        if asked and seen.session_id and seen.session_id != asked:
            yield seen.apply(
                RunNotice(f"agy did not continue conversation {asked}; it started a new one ({seen.session_id}).")
            )
        # agy runs its default (Flash) when a --model does not resolve, and says so only in its init event.
        fell_back = served_notice("agy", inv.model, [seen.model] if seen.model else [])
        if fell_back:
            yield seen.apply(RunNotice(fell_back))
        notices = run_notices(seen, exit_.stderr, exit_.returncode)
        for notice in notices:
            yield seen.apply(RunNotice(notice))
        failure = classify_exit(exit_.returncode, seen, exit_.stderr, schema_run=inv.schema_run)
        if failure is not None:
            logger.info("agy exited %d (%s)", exit_.returncode, failure.reason)
            raise failure
        yield verdict(seen, partial=is_partial(notices))

    def _execute(
        self, seen: Transcript, inv: Invocation, cwd: Path, decoder: AgyDecoder, run: CliRun
    ) -> AsyncGenerator[AgentEvent, None]:
        """One agy process for this run (a warm subclass serves turns from a live one); fills `run.exit`."""
        return stream_cli(
            seen,
            inv.argv,
            env=self.env(),
            cwd=cwd,
            stdin=inv.stdin,
            decoder=decoder,
            grace=self._settings.kill_grace,
            install_hint=INSTALL_HINT,
            run=run,
        )

    async def _catalog_for(self, spec: RunSpec) -> Catalog:
        """The live catalog only when it matters: a label, a family or an effort to fold into the model id."""
        raw = spec.model or self.section.default_model
        reduced = reduce_model(raw, FALLBACK_MODELS)
        if reduced is None or (spec.effort is None and reduced in {m.id for m in FALLBACK_MODELS}):
            return Catalog(FALLBACK_MODELS, live=False)
        return await self.models()

    def _cwd(self) -> Path:
        return self._settings.project_root


def _physical(path: Path) -> Path:
    """agy keys its conversation cache by its getcwd(), the symlink-free path."""
    try:
        return path.resolve(strict=True)
    except OSError:
        return path.absolute()
