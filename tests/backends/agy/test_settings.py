"""agy's settings section: AGY_* read from the server's environment, trimmed, blank meaning unset."""

from __future__ import annotations

import pytest

from gemini_relay.backends.agy.settings import AgySettings
from gemini_relay.backends.agy.usage import Thresholds
from gemini_relay.errors import ConfigError


def test_unset_means_agys_own_defaults() -> None:
    assert AgySettings.from_env({}) == AgySettings(cli_path=None, default_model=None, print_timeout=None)


def test_values_are_trimmed_and_blank_is_unset() -> None:
    env = {"AGY_CLI_PATH": " agy ", "AGY_DEFAULT_MODEL": "flash\n", "AGY_PRINT_TIMEOUT": "  "}
    assert AgySettings.from_env(env) == AgySettings(cli_path="agy", default_model="flash", print_timeout=None)


def test_the_gemini_default_model_is_not_agys() -> None:
    assert AgySettings.from_env({"GEMINI_DEFAULT_MODEL": "pro"}).default_model is None


def test_quota_thresholds_are_percents_from_the_environment_and_agy_mcps_names_are_accepted() -> None:
    assert AgySettings.from_env({}).thresholds == Thresholds(low=0.25, critical=0.05)
    seeded = AgySettings.from_env({"AGY_MCP_USAGE_LOW": "40%", "AGY_MCP_USAGE_CRITICAL": "10"})
    assert seeded.thresholds == Thresholds(low=0.4, critical=0.1)
    both = AgySettings.from_env({"GEMINI_RELAY_USAGE_LOW": "30", "AGY_MCP_USAGE_LOW": "40"})
    assert both.thresholds.low == 0.3  # the relay's own name wins


def test_the_background_quota_refresh_is_off_unless_an_interval_is_set() -> None:
    assert AgySettings.from_env({}).usage_interval is None
    assert AgySettings.from_env({"GEMINI_RELAY_USAGE_INTERVAL": "0"}).usage_interval is None
    assert AgySettings.from_env({"GEMINI_RELAY_USAGE_INTERVAL": "off"}).usage_interval is None
    assert AgySettings.from_env({"GEMINI_RELAY_USAGE_INTERVAL": "5m"}).usage_interval == 300
    assert AgySettings.from_env({"AGY_MCP_USAGE_INTERVAL": "90"}).usage_interval == 90


BAD_QUOTA_SETTINGS = [
    ({"GEMINI_RELAY_USAGE_LOW": "abc"}, "GEMINI_RELAY_USAGE_LOW"),
    ({"AGY_MCP_USAGE_LOW": "NaN"}, "AGY_MCP_USAGE_LOW"),
    ({"AGY_MCP_USAGE_CRITICAL": "101"}, "AGY_MCP_USAGE_CRITICAL"),
    ({"GEMINI_RELAY_USAGE_CRITICAL": "-1"}, "GEMINI_RELAY_USAGE_CRITICAL"),
    ({"GEMINI_RELAY_USAGE_CRITICAL": "30"}, "GEMINI_RELAY_USAGE_CRITICAL"),  # above the default low (25)
    ({"AGY_MCP_USAGE_LOW": "2"}, "AGY_MCP_USAGE_LOW"),  # below the default critical (5)
    ({"GEMINI_RELAY_USAGE_INTERVAL": "30s"}, "GEMINI_RELAY_USAGE_INTERVAL"),  # under the 60 s floor
    ({"AGY_MCP_USAGE_INTERVAL": "soon"}, "AGY_MCP_USAGE_INTERVAL"),
]


@pytest.mark.parametrize(("env", "variable"), BAD_QUOTA_SETTINGS, ids=[v for _, v in BAD_QUOTA_SETTINGS])
def test_a_quota_setting_it_cannot_use_is_a_config_error_naming_the_variable(
    env: dict[str, str], variable: str
) -> None:
    with pytest.raises(ConfigError) as raised:
        AgySettings.from_env(env)
    assert raised.value.variable == variable and str(raised.value).startswith(variable)
