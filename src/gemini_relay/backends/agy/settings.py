"""agy's settings section (AGY_*), parsed from the server's environment, and the name the registry knows agy by."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from gemini_relay.backends.probe import locate
from gemini_relay.config import switch_setting, text_setting
from gemini_relay.core.vocabulary import BackendName

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


@dataclass(frozen=True)
class AgySettings:
    cli_path: str | None = None  # AGY_CLI_PATH: a path or a name looked up on PATH (default `agy`)
    default_model: str | None = None  # AGY_DEFAULT_MODEL (None: agy's own default)
    print_timeout: str | None = None  # AGY_PRINT_TIMEOUT, a Go duration (checked by validate_config)
    project_rules: bool = True  # AGY_PROJECT_RULES: a run's cwd goes as --add-dir unless the call says otherwise

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> AgySettings:
        return cls(
            cli_path=text_setting(env, "AGY_CLI_PATH"),
            default_model=text_setting(env, "AGY_DEFAULT_MODEL"),
            print_timeout=text_setting(env, "AGY_PRINT_TIMEOUT"),
            project_rules=switch_setting(env, "AGY_PROJECT_RULES", default=True),
        )

    def locate(self, env: Mapping[str, str]) -> Path | None:
        return locate(self.cli_path, "agy", env)
