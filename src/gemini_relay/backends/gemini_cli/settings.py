"""The Gemini CLI's settings section (GEMINI_CLI_PATH, GEMINI_DEFAULT_MODEL, the warm ACP limits), parsed from the
server's environment; where the CLI keeps its state; and the name the registry knows it by."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from gemini_relay.backends.env import child_env
from gemini_relay.backends.probe import locate
from gemini_relay.config import positive_setting, text_setting
from gemini_relay.core.vocabulary import BackendName
from gemini_relay.errors import BackendUnavailable

NAME = BackendName("gemini")
INSTALL_HINT = (
    "Install it with `npm install -g @google/gemini-cli` (Node 20+) or set GEMINI_CLI_PATH to the gemini binary."
)
# Sessions one warm CLI serves before it is recycled: the CLI has no session/close, so each stays in its heap
# (~0.6 MB each under DEFAULT_WARM_HEAP_MB; ~3.5 MB without a heap limit).
DEFAULT_WARM_MAX_SESSIONS = 64
# A warm CLI's V8 heap limit (--max-old-space-size). With none, V8 sizes it from the machine's RAM and lets finished
# sessions pile up: 60 sessions held 532 MB resident; 288 MB at 512, 313 MB at 1024, 341 MB at 1536.
DEFAULT_WARM_HEAP_MB = 512
# Warm CLIs one pool keeps at once (distinct binaries or environments); a new one evicts the least recently used idle
# one, never one running a prompt (it waits instead). The relay host shares one pool among all of a user's projects.
DEFAULT_WARM_MAX = 2
DEFAULT_WARM_MAX_RSS_MB = 320  # a warm CLI past this resident size is recycled (a fresh one holds ~235-280 MB)


@dataclass(frozen=True)
class GeminiCliSettings:
    cli_path: str | None = None  # GEMINI_CLI_PATH: a path or a name looked up on PATH (default `gemini`)
    default_model: str | None = None  # GEMINI_DEFAULT_MODEL (None: the CLI's router, `auto`)
    warm_max_sessions: int = DEFAULT_WARM_MAX_SESSIONS  # GEMINI_RELAY_WARM_MAX_SESSIONS
    warm_max_rss_mb: int = DEFAULT_WARM_MAX_RSS_MB  # GEMINI_RELAY_WARM_MAX_RSS_MB
    warm_heap_mb: int = DEFAULT_WARM_HEAP_MB  # GEMINI_RELAY_WARM_HEAP_MB: the warm CLI's V8 old-space limit
    warm_max: int = DEFAULT_WARM_MAX  # GEMINI_RELAY_WARM_MAX: warm CLIs one pool keeps at once

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> GeminiCliSettings:
        """Raises ConfigError naming the variable for a limit that is not a whole number above 0."""

        def count(name: str, default: int) -> int:
            return int(positive_setting(env, name, default, integer=True))

        return cls(
            cli_path=text_setting(env, "GEMINI_CLI_PATH"),
            default_model=text_setting(env, "GEMINI_DEFAULT_MODEL"),
            warm_max=count("GEMINI_RELAY_WARM_MAX", DEFAULT_WARM_MAX),
            warm_max_sessions=count("GEMINI_RELAY_WARM_MAX_SESSIONS", DEFAULT_WARM_MAX_SESSIONS),
            warm_max_rss_mb=count("GEMINI_RELAY_WARM_MAX_RSS_MB", DEFAULT_WARM_MAX_RSS_MB),
            warm_heap_mb=count("GEMINI_RELAY_WARM_HEAP_MB", DEFAULT_WARM_HEAP_MB),
        )

    def locate(self, env: Mapping[str, str]) -> Path | None:
        return locate(self.cli_path, "gemini", env)

    def require_binary(self, env: Mapping[str, str]) -> Path:
        """Raises BackendUnavailable, with the install hint, when the CLI is not there."""
        binary = self.locate(env)
        if binary is None:
            where = f"GEMINI_CLI_PATH={self.cli_path}" if self.cli_path else "PATH"
            raise BackendUnavailable(f"The Gemini CLI (gemini) was not found on {where}. {INSTALL_HINT}")
        return binary


def cli_env(environ: Mapping[str, str], state_dir: Path | None = None) -> dict[str, str]:
    """The CLI's child environment: the allowlist, and no relaunch (the CLI's self-respawn costs ~0.5 s per call and
    its parent ignores SIGTERM, gemini-cli.md §10.2). With `state_dir`, Node's compile cache goes there unless the
    user set NODE_COMPILE_CACHE: Node >= 22.1 then skips recompiling the CLI's bundle (a cold run takes ~10% less
    CPU); older Node ignores it."""
    env = child_env(environ)
    env.setdefault("GEMINI_CLI_NO_RELAUNCH", "true")
    if state_dir is not None:
        env.setdefault("NODE_COMPILE_CACHE", str(state_dir / "node-compile-cache"))
    return env


def gemini_home(env: Mapping[str, str]) -> Path:
    """The directory holding the CLI's `.gemini` state folder."""
    return Path(env.get("GEMINI_CLI_HOME") or env.get("HOME") or Path.home()).expanduser()
