"""Settings resolved once from the environment: every env var the server reads is parsed here, except a backend's own
section (AGY_*, GEMINI_CLI_PATH, ...), which its package parses (backends/<name>/settings.py) with the helpers here."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from gemini_relay.core.pacing import PacingPolicy
from gemini_relay.core.vocabulary import Toolset
from gemini_relay.errors import ConfigError

DEFAULT_TIMEOUT_MINUTES = 45.0
DEFAULT_MAX_CONCURRENT = 3
DEFAULT_PROGRESS_INTERVAL = 25.0
DEFAULT_KILL_GRACE = 10.0  # SIGTERM -> SIGKILL: CLIs flush their session files on SIGTERM
DEFAULT_JOB_TTL = 24 * 3600.0
# Below the ~120 s at which common clients (Claude Code) abandon a tool call, so a still-running status arrives.
DEFAULT_WAIT_CAP = 90.0
DEFAULT_MIN_GAP_MS = 0.0
DEFAULT_JITTER_MS = 200.0
# Long enough to wait behind a typical run (keepalives keep the client alive meanwhile), short enough to fail with
# a clear message around when clients configured as the README suggests (tool_timeout_sec = 600) give up anyway.
DEFAULT_QUEUE_WAIT = 600.0
DEFAULT_HOST = True  # GEMINI_RELAY_HOST unset
DEFAULT_HOST_IDLE = 900.0  # a relay host with no run and no server connected this long exits
DEFAULT_HOST_TIMEOUT = 30.0  # a request to the relay host (a create is a few store writes): past this it is stuck
DEFAULT_ASK_TIMEOUT = 120.0  # GEMINI_RELAY_ASK_TIMEOUT: how long a person has to answer one permission question
DEFAULT_WARM_IDLE = 600.0  # a warm process (`gemini --acp` holds ~260 MB) unused this long is stopped
DISABLED = ("none", "off")


@dataclass(frozen=True)
class Settings:
    # GEMINI_MCP_BACKEND as given (trimmed, lower case), None: choose automatically. The registry resolves it to a
    # backend (its name or an alias) and refuses one it does not know (backends/backend_registry.py).
    backend: str | None
    timeout_seconds: float
    max_concurrent: int
    progress_interval: float
    kill_grace: float
    project_root: Path
    test_tools: bool
    toolsets: frozenset[Toolset]
    # GEMINI_RELAY_TOOLS: the only tools to serve, by name (None: every tool of the enabled toolsets). Whether each
    # name is a tool of those toolsets is checked where the tools are known (tools/registry.check_allowlist).
    tools: frozenset[str] | None = None
    # GEMINI_MCP_TEST_TOOLS=conformance: also serve the MCP conformance runner's fixture tools, prompts and resources
    conformance: bool = False
    allowed_roots: tuple[Path, ...] = ()  # GEMINI_RELAY_ALLOWED_ROOTS: where a per-call cwd may point (empty: anywhere)
    image_dir: Path | None = None
    state_dir: Path = field(default_factory=lambda: default_state_dir({}))
    job_ttl_seconds: float = DEFAULT_JOB_TTL
    wait_cap_seconds: float = DEFAULT_WAIT_CAP
    env: Mapping[str, str] = field(repr=False, default_factory=dict[str, str])
    fallback_model: str | None = None  # GEMINI_FALLBACK_MODEL as given: None unset, "none" disables
    min_gap_seconds: float = DEFAULT_MIN_GAP_MS / 1000
    jitter_seconds: float = DEFAULT_JITTER_MS / 1000
    queue_wait_seconds: float | None = DEFAULT_QUEUE_WAIT  # None: wait without limit
    warm_idle_seconds: float = DEFAULT_WARM_IDLE
    # GEMINI_RELAY_WARM: serve runs from warm processes (the backends that keep one), on by default: the relay host
    # owns them, so a warm run is a durable job like a cold one, and a later ask skips the CLI's boot.
    warm: bool = True
    host: bool = False  # GEMINI_RELAY_HOST: runs go through the per-user relay host (relay_host/host.py)
    host_idle_seconds: float = DEFAULT_HOST_IDLE
    host_timeout_seconds: float = DEFAULT_HOST_TIMEOUT  # GEMINI_RELAY_HOST_TIMEOUT
    ask_timeout_seconds: float = DEFAULT_ASK_TIMEOUT  # GEMINI_RELAY_ASK_TIMEOUT: a person's time to answer a question

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, *, cwd: Path | None = None) -> Settings:
        env = dict(os.environ if environ is None else environ)
        root_raw = env.get("GEMINI_RELAY_PROJECT_ROOT") or str(cwd or Path.cwd())
        root = Path(root_raw).expanduser()
        if not root.is_dir():
            raise ConfigError(
                f"GEMINI_RELAY_PROJECT_ROOT={root_raw!r} is not a directory", variable="GEMINI_RELAY_PROJECT_ROOT"
            )
        warm = switch_setting(env, "GEMINI_RELAY_WARM", default=True)
        host = _host(env)
        return cls(
            backend=(text_setting(env, "GEMINI_MCP_BACKEND") or "").lower() or None,
            timeout_seconds=positive_setting(env, "GEMINI_MCP_TIMEOUT", DEFAULT_TIMEOUT_MINUTES) * 60.0,
            max_concurrent=int(
                positive_setting(env, "GEMINI_RELAY_MAX_CONCURRENT", DEFAULT_MAX_CONCURRENT, integer=True)
            ),
            progress_interval=_heartbeat(env),
            kill_grace=positive_setting(env, "GEMINI_RELAY_KILL_GRACE", DEFAULT_KILL_GRACE),
            project_root=root.resolve(),
            allowed_roots=_roots(env.get("GEMINI_RELAY_ALLOWED_ROOTS", "")),
            test_tools=bool(env.get("GEMINI_MCP_TEST_TOOLS")),
            conformance=(env.get("GEMINI_MCP_TEST_TOOLS") or "").strip().lower() == "conformance",
            toolsets=_toolsets(env.get("GEMINI_RELAY_TOOLSETS", "")),
            tools=_tool_names(env.get("GEMINI_RELAY_TOOLS", "")),
            image_dir=Path(image_dir).expanduser()
            if (image_dir := text_setting(env, "GEMINI_RELAY_IMAGE_DIR"))
            else None,
            state_dir=default_state_dir(env),
            job_ttl_seconds=_duration(env, "GEMINI_RELAY_JOB_TTL", DEFAULT_JOB_TTL),
            wait_cap_seconds=_duration(env, "GEMINI_RELAY_WAIT_CAP", DEFAULT_WAIT_CAP),
            env=env,
            fallback_model=text_setting(env, "GEMINI_FALLBACK_MODEL"),
            min_gap_seconds=_non_negative(env, "GEMINI_RELAY_MIN_GAP_MS", DEFAULT_MIN_GAP_MS) / 1000,
            # The start jitter spreads bursts of independent servers; a relay host already queues and paces every
            # server's starts in one place, and a warm run boots nothing: neither needs it by default.
            jitter_seconds=_non_negative(env, "GEMINI_RELAY_JITTER_MS", 0.0 if warm or host else DEFAULT_JITTER_MS)
            / 1000,
            queue_wait_seconds=_queue_wait(env),
            warm_idle_seconds=_duration(env, "GEMINI_RELAY_WARM_IDLE", DEFAULT_WARM_IDLE),
            warm=warm,
            host=host,
            host_idle_seconds=_duration(env, "GEMINI_RELAY_HOST_IDLE", DEFAULT_HOST_IDLE),
            host_timeout_seconds=_duration(env, "GEMINI_RELAY_HOST_TIMEOUT", DEFAULT_HOST_TIMEOUT),
            ask_timeout_seconds=_duration(env, "GEMINI_RELAY_ASK_TIMEOUT", DEFAULT_ASK_TIMEOUT),
        )

    def pacing(self) -> PacingPolicy:
        """GEMINI_RELAY_MIN_GAP_MS, GEMINI_RELAY_JITTER_MS and GEMINI_RELAY_QUEUE_WAIT, for jobs.pacing.Pacer."""
        return PacingPolicy(self.min_gap_seconds, self.jitter_seconds, self.queue_wait_seconds)


def _non_negative(env: Mapping[str, str], name: str, default: float) -> float:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ConfigError(f"{name}={raw!r} is not a number of milliseconds", variable=name) from None
    if not math.isfinite(value) or value < 0:
        raise ConfigError(f"{name}={raw!r} must be a finite number ≥ 0", variable=name)
    return value


def _heartbeat(env: Mapping[str, str]) -> float:
    """Seconds between progress keepalives: GEMINI_HEARTBEAT_MS (0 disables them) over
    GEMINI_RELAY_PROGRESS_INTERVAL (seconds)."""
    if env.get("GEMINI_HEARTBEAT_MS", "").strip():
        return _non_negative(env, "GEMINI_HEARTBEAT_MS", DEFAULT_PROGRESS_INTERVAL * 1000) / 1000
    return positive_setting(env, "GEMINI_RELAY_PROGRESS_INTERVAL", DEFAULT_PROGRESS_INTERVAL)


def _host(env: Mapping[str, str]) -> bool:
    raw = env.get("GEMINI_RELAY_HOST", "").strip().lower()
    if not raw:
        return DEFAULT_HOST
    if raw in ("on", "1", "true", "yes"):
        return True
    if raw in (*DISABLED, "0", "false", "no"):
        return False
    raise ConfigError(f"GEMINI_RELAY_HOST={raw!r} must be on or off", variable="GEMINI_RELAY_HOST")


def _queue_wait(env: Mapping[str, str]) -> float | None:
    raw = env.get("GEMINI_RELAY_QUEUE_WAIT", "").strip()
    if raw.lower() in DISABLED:
        return None
    return positive_setting(env, "GEMINI_RELAY_QUEUE_WAIT", DEFAULT_QUEUE_WAIT)


def _roots(raw: str) -> tuple[Path, ...]:
    roots = []
    for part in raw.split(os.pathsep):
        if part.strip():
            path = Path(part.strip()).expanduser()
            if not path.is_dir():
                message = f"GEMINI_RELAY_ALLOWED_ROOTS entry {part!r} is not a directory"
                raise ConfigError(message, variable="GEMINI_RELAY_ALLOWED_ROOTS")
            roots.append(path.resolve())
    return tuple(roots)


def default_state_dir(env: Mapping[str, str]) -> Path:
    """GEMINI_RELAY_STATE_DIR, else $XDG_STATE_HOME/gemini-relay, else ~/.local/state/gemini-relay."""
    explicit = text_setting(env, "GEMINI_RELAY_STATE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    xdg = text_setting(env, "XDG_STATE_HOME")
    home = Path(env.get("HOME") or Path.home()).expanduser()
    return (Path(xdg).expanduser() if xdg else home / ".local" / "state") / "gemini-relay"


_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def switch_setting(env: Mapping[str, str], name: str, *, default: bool) -> bool:
    """An on/off variable (1/0, on/off, true/false, yes/no); unset or blank: `default`. ConfigError otherwise."""
    raw = env.get(name, "").strip().lower()
    if not raw:
        return default
    if raw in ("1", "on", "true", "yes"):
        return True
    if raw in ("0", "off", "false", "no"):
        return False
    raise ConfigError(f"{name}={raw!r} must be on or off", variable=name)


def _duration(env: Mapping[str, str], name: str, default: float) -> float:
    """Seconds, or a number with an s/m/h/d suffix (`90`, `90s`, `24h`)."""
    raw = env.get(name, "").strip().lower()
    if not raw:
        return default
    unit = _UNITS.get(raw[-1])
    number = raw[:-1] if unit is not None else raw
    try:
        value = float(number) * (unit or 1.0)
    except ValueError:
        message = f"{name}={raw!r} is not a duration (seconds, or a number with s/m/h/d)"
        raise ConfigError(message, variable=name) from None
    if not math.isfinite(value) or value <= 0:
        raise ConfigError(f"{name}={raw!r} must be a positive duration", variable=name)
    return value


def _toolsets(raw: str) -> frozenset[Toolset]:
    names = [part.strip().lower() for part in raw.split(",") if part.strip()]
    known = {t.value: t for t in Toolset}
    unknown = [n for n in names if n not in known and n != "all"]
    if unknown:
        raise ConfigError(
            f"GEMINI_RELAY_TOOLSETS names unknown toolset(s) {', '.join(unknown)}; known: {', '.join(known)}",
            variable="GEMINI_RELAY_TOOLSETS",
        )
    if "all" in names:
        return frozenset(Toolset)
    return frozenset(known[n] for n in names)


def _tool_names(raw: str) -> frozenset[str] | None:
    """GEMINI_RELAY_TOOLS: comma-separated tool names (case-insensitive); unset or blank: no allowlist."""
    names = frozenset(part.strip().lower() for part in raw.split(",") if part.strip())
    return names or None


def text_setting(env: Mapping[str, str], name: str) -> str | None:
    value = env.get(name, "").strip()
    return value or None


def positive_setting(env: Mapping[str, str], name: str, default: float, *, integer: bool = False) -> float:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw) if integer else float(raw)
    except ValueError:
        kind = "a whole number" if integer else "a number"
        raise ConfigError(f"{name}={raw!r} is not {kind}", variable=name) from None
    if not math.isfinite(value):  # float() accepts "nan" and "inf"; neither is a usable timeout or grace
        raise ConfigError(f"{name}={raw!r} is not a finite number", variable=name)
    if value <= 0:
        raise ConfigError(f"{name}={raw!r} must be greater than 0", variable=name)
    return float(value)


def chosen_name(env: Mapping[str, str], names: tuple[str, ...]) -> str:
    """Which of `names` a setting is read from: the first one set to something non-blank (the relay's own name comes
    first, a seed's name for the same setting after it), else the first."""
    return next((name for name in names if env.get(name, "").strip()), names[0])


def duration_setting(env: Mapping[str, str], name: str, default: float) -> float:
    """Seconds, or a number with an s/m/h/d suffix; ConfigError naming `name` for anything else, or ≤ 0."""
    return _duration(env, name, default)
