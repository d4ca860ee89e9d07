"""Settings.from_env: defaults, parsing, and a ConfigError naming the variable for every bad value."""

from __future__ import annotations

from pathlib import Path

import pytest

from gemini_relay.config import (
    DEFAULT_KILL_GRACE,
    DEFAULT_MAX_CONCURRENT,
    DEFAULT_PROGRESS_INTERVAL,
    DEFAULT_TIMEOUT_MINUTES,
    Settings,
)
from gemini_relay.errors import ConfigError


def settings(tmp_path: Path, **env: str) -> Settings:
    return Settings.from_env(env, cwd=tmp_path)


def test_defaults_with_an_empty_environment(tmp_path: Path) -> None:
    s = settings(tmp_path)
    assert s.backend is None
    assert s.timeout_seconds == 45 * 60.0
    assert s.max_concurrent == 3
    assert s.progress_interval == 25.0
    assert s.kill_grace == 10.0
    assert s.project_root == tmp_path.resolve()
    assert s.test_tools is False
    assert s.env == {}
    assert s.warm is True and s.host is True  # warm runs in the relay host: the fast path is the default path


def test_the_documented_default_constants() -> None:
    assert (DEFAULT_TIMEOUT_MINUTES, DEFAULT_MAX_CONCURRENT, DEFAULT_PROGRESS_INTERVAL, DEFAULT_KILL_GRACE) == (
        45.0,
        3,
        25.0,
        10.0,
    )


def test_the_timeout_is_in_minutes_and_may_be_fractional(tmp_path: Path) -> None:
    assert settings(tmp_path, GEMINI_MCP_TIMEOUT="10").timeout_seconds == 600.0
    assert settings(tmp_path, GEMINI_MCP_TIMEOUT="0.5").timeout_seconds == 30.0
    assert settings(tmp_path, GEMINI_MCP_TIMEOUT=" 1.25 ").timeout_seconds == 75.0


def test_numbers_are_parsed(tmp_path: Path) -> None:
    s = settings(
        tmp_path,
        GEMINI_RELAY_MAX_CONCURRENT="7",
        GEMINI_RELAY_PROGRESS_INTERVAL="2.5",
        GEMINI_RELAY_KILL_GRACE="0.3",
    )
    assert s.max_concurrent == 7
    assert isinstance(s.max_concurrent, int)
    assert s.progress_interval == 2.5
    assert s.kill_grace == 0.3


def test_blank_values_mean_the_default(tmp_path: Path) -> None:
    s = settings(tmp_path, GEMINI_MCP_TIMEOUT="  ", GEMINI_RELAY_MAX_CONCURRENT="", GEMINI_FALLBACK_MODEL="  ")
    assert s.timeout_seconds == 45 * 60.0
    assert s.max_concurrent == 3
    assert s.fallback_model is None


def test_text_settings_are_stripped(tmp_path: Path) -> None:
    s = settings(tmp_path, GEMINI_FALLBACK_MODEL=" gemini-2.5-flash\n", GEMINI_RELAY_IMAGE_DIR=" /tmp/images ")
    assert (s.fallback_model, s.image_dir) == ("gemini-2.5-flash", Path("/tmp/images"))


@pytest.mark.parametrize(
    ("name", "value", "says"),
    [
        ("GEMINI_MCP_TIMEOUT", "ten", "is not a number"),
        ("GEMINI_MCP_TIMEOUT", "0", "must be greater than 0"),
        ("GEMINI_MCP_TIMEOUT", "-5", "must be greater than 0"),
        ("GEMINI_MCP_TIMEOUT", "nan", "is not a finite number"),
        ("GEMINI_MCP_TIMEOUT", "inf", "is not a finite number"),
        ("GEMINI_MCP_TIMEOUT", "10m", "is not a number"),
        ("GEMINI_RELAY_MAX_CONCURRENT", "2.5", "is not a whole number"),
        ("GEMINI_RELAY_MAX_CONCURRENT", "0", "must be greater than 0"),
        ("GEMINI_RELAY_MAX_CONCURRENT", "many", "is not a whole number"),
        ("GEMINI_RELAY_PROGRESS_INTERVAL", "-1", "must be greater than 0"),
        ("GEMINI_RELAY_KILL_GRACE", "soon", "is not a number"),
        ("GEMINI_RELAY_KILL_GRACE", "NaN", "is not a finite number"),
        ("GEMINI_RELAY_MIN_GAP_MS", "-1", "must be a finite number ≥ 0"),
        ("GEMINI_RELAY_JITTER_MS", "abc", "is not a number of milliseconds"),
        ("GEMINI_RELAY_JITTER_MS", "inf", "must be a finite number ≥ 0"),
        ("GEMINI_RELAY_QUEUE_WAIT", "0", "must be greater than 0"),
        ("GEMINI_RELAY_QUEUE_WAIT", "soon", "is not a number"),
    ],
)
def test_a_bad_number_is_a_config_error_naming_the_variable_and_value(
    tmp_path: Path, name: str, value: str, says: str
) -> None:
    with pytest.raises(ConfigError) as info:
        settings(tmp_path, **{name: value})
    assert str(info.value) == f"{name}={value!r} {says}"


@pytest.mark.parametrize(("raw", "kept"), [("agy", "agy"), (" Gemini-CLI ", "gemini-cli"), ("", None), ("   ", None)])
def test_the_backend_choice_is_kept_as_given_for_the_registry_to_resolve(
    tmp_path: Path, raw: str, kept: str | None
) -> None:
    # Which names and aliases exist is the registry's to say (tests/backends/test_registry.py), not the settings'.
    assert settings(tmp_path, GEMINI_MCP_BACKEND=raw).backend == kept


def test_the_project_root_comes_from_the_environment_and_is_resolved(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    link = tmp_path / "link"
    link.symlink_to(project)
    assert settings(tmp_path, GEMINI_RELAY_PROJECT_ROOT=str(link)).project_root == project.resolve()


def test_a_project_root_that_is_not_a_directory_is_a_config_error(tmp_path: Path) -> None:
    missing = str(tmp_path / "missing")
    with pytest.raises(ConfigError, match="GEMINI_RELAY_PROJECT_ROOT=.* is not a directory"):
        settings(tmp_path, GEMINI_RELAY_PROJECT_ROOT=missing)
    a_file = tmp_path / "file"
    a_file.write_text("", encoding="utf-8")
    with pytest.raises(ConfigError, match="is not a directory"):
        settings(tmp_path, GEMINI_RELAY_PROJECT_ROOT=str(a_file))


def test_test_tools_are_on_when_the_variable_is_set(tmp_path: Path) -> None:
    assert settings(tmp_path, GEMINI_MCP_TEST_TOOLS="1").test_tools is True
    assert settings(tmp_path, GEMINI_MCP_TEST_TOOLS="").test_tools is False


def test_the_environment_is_kept_for_the_backends_but_not_shown_in_repr(tmp_path: Path) -> None:
    s = settings(tmp_path, GEMINI_API_KEY="secret-key")
    assert s.env == {"GEMINI_API_KEY": "secret-key"}
    assert "secret-key" not in repr(s)


def test_the_environment_is_copied(tmp_path: Path) -> None:
    env = {"GEMINI_API_KEY": "a"}
    s = Settings.from_env(env, cwd=tmp_path)
    env["GEMINI_API_KEY"] = "b"
    assert s.env["GEMINI_API_KEY"] == "a"


def test_the_tool_allowlist_is_a_set_of_lower_case_names_and_unset_means_every_tool(tmp_path: Path) -> None:
    assert settings(tmp_path).tools is None
    assert settings(tmp_path, GEMINI_RELAY_TOOLS=" , ").tools is None
    assert settings(tmp_path, GEMINI_RELAY_TOOLS="gemini-ask, Gemini-Ping,").tools == frozenset(
        {"gemini-ask", "gemini-ping"}
    )
