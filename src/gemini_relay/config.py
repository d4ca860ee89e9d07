"""Settings resolved once from the environment; every env var the server reads is parsed here."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from gemini_relay.errors import ConfigError
from gemini_relay.jobs.vocabulary import BackendName, Toolset

DEFAULT_TIMEOUT_MINUTES = 45.0
DEFAULT_MAX_CONCURRENT = 3
DEFAULT_PROGRESS_INTERVAL = 25.0
DEFAULT_KILL_GRACE = 5.0

_BACKEND_ALIASES = {
    "agy": BackendName.AGY,
    "antigravity": BackendName.AGY,
    "gemini": BackendName.GEMINI,
    "gemini-cli": BackendName.GEMINI,
}


@dataclass(frozen=True)
class Settings:
    backend: BackendName | None  # None: choose automatically (agy when found, else gemini)
    gemini_cli_path: str | None
    agy_cli_path: str | None
    default_model: str | None
    agy_default_model: str | None
    agy_print_timeout: str | None
    timeout_seconds: float
    max_concurrent: int
    progress_interval: float
    kill_grace: float
    project_root: Path
    test_tools: bool
    toolsets: frozenset[Toolset]
    image_dir: Path | None = None
    env: Mapping[str, str] = field(repr=False, default_factory=dict[str, str])

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, *, cwd: Path | None = None) -> Settings:
        env = dict(os.environ if environ is None else environ)
        root_raw = env.get("GEMINI_RELAY_PROJECT_ROOT") or str(cwd or Path.cwd())
        root = Path(root_raw).expanduser()
        if not root.is_dir():
            raise ConfigError(f"GEMINI_RELAY_PROJECT_ROOT={root_raw!r} is not a directory")
        return cls(
            backend=_backend(env.get("GEMINI_MCP_BACKEND")),
            gemini_cli_path=_text(env, "GEMINI_CLI_PATH"),
            agy_cli_path=_text(env, "AGY_CLI_PATH"),
            default_model=_text(env, "GEMINI_DEFAULT_MODEL"),
            agy_default_model=_text(env, "AGY_DEFAULT_MODEL"),
            agy_print_timeout=_text(env, "AGY_PRINT_TIMEOUT"),
            timeout_seconds=_positive(env, "GEMINI_MCP_TIMEOUT", DEFAULT_TIMEOUT_MINUTES) * 60.0,
            max_concurrent=int(_positive(env, "GEMINI_RELAY_MAX_CONCURRENT", DEFAULT_MAX_CONCURRENT, integer=True)),
            progress_interval=_positive(env, "GEMINI_RELAY_PROGRESS_INTERVAL", DEFAULT_PROGRESS_INTERVAL),
            kill_grace=_positive(env, "GEMINI_RELAY_KILL_GRACE", DEFAULT_KILL_GRACE),
            project_root=root.resolve(),
            test_tools=bool(env.get("GEMINI_MCP_TEST_TOOLS")),
            toolsets=_toolsets(env.get("GEMINI_RELAY_TOOLSETS", "")),
            image_dir=Path(image_dir).expanduser() if (image_dir := _text(env, "GEMINI_RELAY_IMAGE_DIR")) else None,
            env=env,
        )


def _toolsets(raw: str) -> frozenset[Toolset]:
    names = [part.strip().lower() for part in raw.split(",") if part.strip()]
    known = {t.value: t for t in Toolset}
    unknown = [n for n in names if n not in known and n != "all"]
    if unknown:
        raise ConfigError(
            f"GEMINI_RELAY_TOOLSETS names unknown toolset(s) {', '.join(unknown)}; known: {', '.join(known)}"
        )
    if "all" in names:
        return frozenset(Toolset)
    return frozenset(known[n] for n in names)


def _text(env: Mapping[str, str], name: str) -> str | None:
    value = env.get(name, "").strip()
    return value or None


def _backend(raw: str | None) -> BackendName | None:
    if raw is None or not raw.strip():
        return None
    try:
        return _BACKEND_ALIASES[raw.strip().lower()]
    except KeyError:
        raise ConfigError(f"GEMINI_MCP_BACKEND={raw!r} is not one of: {', '.join(_BACKEND_ALIASES)}") from None


def _positive(env: Mapping[str, str], name: str, default: float, *, integer: bool = False) -> float:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw) if integer else float(raw)
    except ValueError:
        kind = "a whole number" if integer else "a number"
        raise ConfigError(f"{name}={raw!r} is not {kind}") from None
    if not math.isfinite(value):  # float() accepts "nan" and "inf"; neither is a usable timeout or grace
        raise ConfigError(f"{name}={raw!r} is not a finite number")
    if value <= 0:
        raise ConfigError(f"{name}={raw!r} must be greater than 0")
    return float(value)
