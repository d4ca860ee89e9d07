"""agy's settings section: AGY_* read from the server's environment, trimmed, blank meaning unset."""

from __future__ import annotations

from gemini_relay.backends.agy.settings import AgySettings


def test_unset_means_agys_own_defaults() -> None:
    assert AgySettings.from_env({}) == AgySettings(cli_path=None, default_model=None, print_timeout=None)


def test_values_are_trimmed_and_blank_is_unset() -> None:
    env = {"AGY_CLI_PATH": " agy ", "AGY_DEFAULT_MODEL": "flash\n", "AGY_PRINT_TIMEOUT": "  "}
    assert AgySettings.from_env(env) == AgySettings(cli_path="agy", default_model="flash", print_timeout=None)


def test_the_gemini_default_model_is_not_agys() -> None:
    assert AgySettings.from_env({"GEMINI_DEFAULT_MODEL": "pro"}).default_model is None
