"""agy's settings section (AGY_*, and its quota's GEMINI_RELAY_USAGE_* with agy-mcp's AGY_MCP_USAGE_* beside them),
parsed from the server's environment, and the name the registry knows agy by."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from gemini_relay.backends.agy.usage import CRITICAL_FRACTION, LOW_FRACTION, Thresholds
from gemini_relay.backends.probe import locate
from gemini_relay.config import DISABLED, chosen_name, duration_setting, switch_setting, text_setting
from gemini_relay.core.vocabulary import BackendName
from gemini_relay.errors import ConfigError

NAME = BackendName("agy")
INSTALL_HINT = (
    "Install agy (the Antigravity CLI) and sign in once by running `agy` in a terminal, or set AGY_CLI_PATH to the "
    "agy binary. Accounts that keep the Gemini CLI can set GEMINI_MCP_BACKEND=gemini."
)
# Beyond the shared allowlist agy needs: ADC switch (1.0.11+), proxies and CA bundles for its API calls, and the
# session bus where its OAuth token may live in the OS keyring.
CHILD_ENV_KEYS = (
    "USE_ADC",
    "HTTPS_PROXY",
    "HTTP_PROXY",
    "NO_PROXY",
    "ALL_PROXY",
    "https_proxy",
    "http_proxy",
    "no_proxy",
    "all_proxy",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "DBUS_SESSION_BUS_ADDRESS",
)
# The relay's own names first; seed 001's (agy-mcp) names are accepted so an agy-mcp user's entry carries over.
USAGE_LOW_ENVS = ("GEMINI_RELAY_USAGE_LOW", "AGY_MCP_USAGE_LOW")
USAGE_CRITICAL_ENVS = ("GEMINI_RELAY_USAGE_CRITICAL", "AGY_MCP_USAGE_CRITICAL")
USAGE_INTERVAL_ENVS = ("GEMINI_RELAY_USAGE_INTERVAL", "AGY_MCP_USAGE_INTERVAL")
# agy-mcp's floor: each refresh spawns agy, so no faster than the cache a caller reads anyway.
MIN_USAGE_INTERVAL = 60.0


@dataclass(frozen=True)
class AgySettings:
    cli_path: str | None = None  # AGY_CLI_PATH: a path or a name looked up on PATH (default `agy`)
    default_model: str | None = None  # AGY_DEFAULT_MODEL (None: agy's own default)
    print_timeout: str | None = None  # AGY_PRINT_TIMEOUT, a Go duration (checked by validate_config)
    thresholds: Thresholds = Thresholds()  # GEMINI_RELAY_USAGE_LOW / _CRITICAL, percent remaining
    usage_interval: float | None = None  # GEMINI_RELAY_USAGE_INTERVAL: the background quota refresh (None: off)
    project_rules: bool = True  # AGY_PROJECT_RULES: a run's cwd goes as --add-dir unless the call says otherwise

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> AgySettings:
        """Raises ConfigError, naming the variable as it was set, for a threshold or interval it cannot use."""
        low = _percent(env, USAGE_LOW_ENVS, LOW_FRACTION)
        critical = _percent(env, USAGE_CRITICAL_ENVS, CRITICAL_FRACTION)
        if critical > low:  # blame the one that was set (the critical one when both were)
            name = chosen_name(env, USAGE_CRITICAL_ENVS)
            name = name if env.get(name, "").strip() else chosen_name(env, USAGE_LOW_ENVS)
            message = f"{name}: the critical threshold ({critical * 100:g}%) is above the low one ({low * 100:g}%)"
            raise ConfigError(message, variable=name)
        return cls(
            cli_path=text_setting(env, "AGY_CLI_PATH"),
            default_model=text_setting(env, "AGY_DEFAULT_MODEL"),
            print_timeout=text_setting(env, "AGY_PRINT_TIMEOUT"),
            thresholds=Thresholds(low=low, critical=critical),
            usage_interval=_interval(env),
            project_rules=switch_setting(env, "AGY_PROJECT_RULES", default=True),
        )

    def locate(self, env: Mapping[str, str]) -> Path | None:
        return locate(self.cli_path, "agy", env)


def _percent(env: Mapping[str, str], names: tuple[str, ...], default: float) -> float:
    """A percent from 0 to 100 (`15` or `15%`, as agy-mcp takes it), as a fraction."""
    name = chosen_name(env, names)
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw.removesuffix("%"))
    except ValueError:
        value = math.nan
    if not 0 <= value <= 100:  # NaN fails this too
        raise ConfigError(f"{name}={raw!r} must be a percent from 0 to 100 (e.g. 25 or 25%)", variable=name)
    return value / 100


def _interval(env: Mapping[str, str]) -> float | None:
    """Seconds between background quota readings (s/m/h suffixes too); unset, 0 or off: no background refresh."""
    name = chosen_name(env, USAGE_INTERVAL_ENVS)
    raw = env.get(name, "").strip().lower()
    if not raw or raw in DISABLED or raw.rstrip("smhd") in ("0", "0.0"):
        return None
    seconds = duration_setting(env, name, 0.0)
    if seconds < MIN_USAGE_INTERVAL:
        message = f"{name}={raw!r} must be 0 (off) or at least {MIN_USAGE_INTERVAL:g} s: each reading spawns agy"
        raise ConfigError(message, variable=name)
    return seconds
