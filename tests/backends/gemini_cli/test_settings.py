"""The Gemini CLI's settings section: GEMINI_CLI_PATH, GEMINI_DEFAULT_MODEL and the warm ACP limits."""

from __future__ import annotations

from pathlib import Path

import pytest

from gemini_relay.backends.gemini_cli.settings import GeminiCliSettings, cli_env, gemini_home
from gemini_relay.errors import ConfigError


def test_the_defaults_with_an_empty_environment() -> None:
    section = GeminiCliSettings.from_env({})
    assert (section.cli_path, section.default_model) == (None, None)
    assert (section.warm_max_sessions, section.warm_max_rss_mb, section.warm_heap_mb) == (64, 320, 512)
    assert section.warm_max == 2


def test_values_are_trimmed_and_parsed() -> None:
    env = {
        "GEMINI_CLI_PATH": " /opt/gemini ",
        "GEMINI_DEFAULT_MODEL": "pro\n",
        "GEMINI_RELAY_WARM_MAX_SESSIONS": "8",
        "GEMINI_RELAY_WARM_MAX_RSS_MB": "4096",
        "GEMINI_RELAY_WARM_HEAP_MB": " 1024 ",
        "GEMINI_RELAY_WARM_MAX": "3",
    }
    assert GeminiCliSettings.from_env(env) == GeminiCliSettings("/opt/gemini", "pro", 8, 4096, 1024, 3)


@pytest.mark.parametrize(
    ("name", "value", "says"),
    [
        ("GEMINI_RELAY_WARM_MAX_SESSIONS", "0", "must be greater than 0"),
        ("GEMINI_RELAY_WARM_MAX_RSS_MB", "lots", "is not a whole number"),
        ("GEMINI_RELAY_WARM_HEAP_MB", "1.5", "is not a whole number"),
        ("GEMINI_RELAY_WARM_MAX", "0", "must be greater than 0"),
    ],
)
def test_a_bad_limit_is_a_config_error_naming_the_variable(name: str, value: str, says: str) -> None:
    with pytest.raises(ConfigError) as info:
        GeminiCliSettings.from_env({name: value})
    assert str(info.value) == f"{name}={value!r} {says}"


def test_the_cli_home_is_gemini_cli_home_else_home() -> None:
    assert str(gemini_home({"GEMINI_CLI_HOME": "/srv/cli", "HOME": "/home/u"})) == "/srv/cli"
    assert str(gemini_home({"HOME": "/home/u"})) == "/home/u"


def test_the_cli_keeps_nodes_compile_cache_in_the_state_dir_unless_the_user_named_one(tmp_path: Path) -> None:
    env = cli_env({"PATH": "/usr/bin"}, tmp_path)
    assert env["NODE_COMPILE_CACHE"] == str(tmp_path / "node-compile-cache")
    assert cli_env({"NODE_COMPILE_CACHE": "/mine"}, tmp_path)["NODE_COMPILE_CACHE"] == "/mine"
    assert "NODE_COMPILE_CACHE" not in cli_env({"PATH": "/usr/bin"})
