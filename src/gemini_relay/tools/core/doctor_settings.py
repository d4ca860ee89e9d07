"""gemini-doctor's settings section: where each effective setting came from (a variable, a seed's alias of it, or
the default), as agy-mcp's doctor says it. Names only for secrets: a key's value never reaches a reply."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Source:
    name: str
    alias_of: str | None = None  # a seed's name the relay accepts for its own (the relay's own wins when both are set)


@dataclass(frozen=True)
class Setting:
    label: str
    sources: tuple[Source, ...]  # highest precedence first
    secret: bool = False


def _one(label: str, name: str, *, secret: bool = False) -> Setting:
    return Setting(label, (Source(name),), secret)


SETTINGS: tuple[Setting, ...] = (
    _one("backend", "GEMINI_MCP_BACKEND"),
    Setting("API key", (Source("GOOGLE_API_KEY"), Source("GEMINI_API_KEY")), secret=True),
    _one("agy binary", "AGY_CLI_PATH"),
    _one("agy default model", "AGY_DEFAULT_MODEL"),
    _one("agy print timeout", "AGY_PRINT_TIMEOUT"),
    _one("agy project rules", "AGY_PROJECT_RULES"),
    _one("Gemini CLI binary", "GEMINI_CLI_PATH"),
    _one("default model", "GEMINI_DEFAULT_MODEL"),
    _one("fallback model", "GEMINI_FALLBACK_MODEL"),
    _one("timeout", "GEMINI_MCP_TIMEOUT"),
    _one("max concurrent", "GEMINI_RELAY_MAX_CONCURRENT"),
    _one("queue wait", "GEMINI_RELAY_QUEUE_WAIT"),
    # GEMINI_HEARTBEAT_MS wins over the relay's own seconds (config._heartbeat)
    Setting("progress interval", (Source("GEMINI_HEARTBEAT_MS"), Source("GEMINI_RELAY_PROGRESS_INTERVAL"))),
    _one("kill grace", "GEMINI_RELAY_KILL_GRACE"),
    _one("project root", "GEMINI_RELAY_PROJECT_ROOT"),
    _one("allowed roots", "GEMINI_RELAY_ALLOWED_ROOTS"),
    _one("toolsets", "GEMINI_RELAY_TOOLSETS"),
    _one("tools", "GEMINI_RELAY_TOOLS"),
    Setting("state dir", (Source("GEMINI_RELAY_STATE_DIR"), Source("XDG_STATE_HOME"))),
    _one("job TTL", "GEMINI_RELAY_JOB_TTL"),
    _one("wait cap", "GEMINI_RELAY_WAIT_CAP"),
    _one("relay host", "GEMINI_RELAY_HOST"),
    _one("warm", "GEMINI_RELAY_WARM"),
    Setting(
        "media dir",
        (Source("GEMINI_RELAY_MEDIA_DIR"), Source("GEMINI_OUTPUT_DIR", alias_of="GEMINI_RELAY_MEDIA_DIR")),
    ),
    Setting(
        "media input dir",
        (Source("GEMINI_RELAY_MEDIA_INPUT_DIR"), Source("GEMINI_INPUT_DIR", alias_of="GEMINI_RELAY_MEDIA_INPUT_DIR")),
    ),
    _one("media timeout", "GEMINI_TIMEOUT_MS"),
    _one("image dir", "GEMINI_RELAY_IMAGE_DIR"),
    _one("HTTP token", "GEMINI_RELAY_HTTP_TOKEN", secret=True),
)


def origin(setting: Setting, env: Mapping[str, str]) -> str:
    """`NAME=value` (or `NAME` for a secret), with `alias of …` for a seed's name; empty when none is set."""
    for source in setting.sources:
        value = env.get(source.name, "").strip()
        if not value:
            continue
        shown = f"`{source.name}` (value not shown)" if setting.secret else f"`{source.name}={value}`"
        return shown + (f", alias of `{source.alias_of}`" if source.alias_of else "")
    return ""


def settings_section(env: Mapping[str, str]) -> list[str]:
    """One line per setting the environment sets, then the ones left at their default on one line."""
    lines = ["## Settings (where each came from)"]
    defaults: list[str] = []
    for setting in SETTINGS:
        said = origin(setting, env)
        if not said:
            defaults.append(setting.label)
        else:
            lines.append(f"- {setting.label}: {said}")
    if defaults:
        lines.append(f"- unset, so the default: {', '.join(defaults)}")
    return lines
