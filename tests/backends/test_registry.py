"""The registry: names and aliases from the entries, the automatic choice each entry declares, the fallback model,
and the environment a relay host needs to build a backend as the asking server would."""

from __future__ import annotations

from pathlib import Path

import pytest

from gemini_relay.backends import backend_registry as registry
from gemini_relay.backends.agy import ENTRY as AGY_ENTRY
from gemini_relay.backends.api import ENTRY as API_ENTRY
from gemini_relay.backends.backend_registry import BackendRegistry, names, register, relevant_env, resolve_name
from gemini_relay.backends.entry import BackendEntry
from gemini_relay.config import Settings
from gemini_relay.core.vocabulary import BackendName
from gemini_relay.errors import ConfigError
from tests.executables import shell_script

AGY_ENABLE = AGY_ENTRY.enable
API_ENABLE = API_ENTRY.enable


def settings(tmp_path: Path, **env: str) -> Settings:
    return Settings.from_env({"GEMINI_RELAY_PROJECT_ROOT": str(tmp_path), "PATH": str(tmp_path / "bin"), **env})


def test_the_known_names_are_the_registered_entries() -> None:
    assert names() == ("agy", "gemini", "api")


@pytest.mark.parametrize(
    ("raw", "name"),
    [
        ("agy", "agy"),
        ("antigravity", "agy"),
        ("AGY", "agy"),
        ("gemini", "gemini"),
        ("gemini-cli", "gemini"),
        (" Gemini-CLI ", "gemini"),
        ("api", "api"),
        ("gemini-api", "api"),
    ],
)
def test_a_backend_is_chosen_by_its_name_or_an_alias(raw: str, name: str) -> None:
    assert resolve_name(raw) == name


def test_an_unknown_backend_is_a_config_error_listing_the_choices(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        BackendRegistry(settings(tmp_path, GEMINI_MCP_BACKEND="openai"))
    assert (
        str(info.value)
        == "GEMINI_MCP_BACKEND='openai' is not one of: agy, antigravity, gemini, gemini-cli, api, gemini-api"
    )


def test_an_explicit_choice_has_no_notice(tmp_path: Path) -> None:
    chosen = BackendRegistry(settings(tmp_path, GEMINI_MCP_BACKEND="antigravity")).select()
    assert (chosen.backend, chosen.notice) == ("agy", None)


def test_unset_agy_on_path_wins_and_the_notice_says_where(tmp_path: Path) -> None:
    agy = shell_script(tmp_path / "bin" / "agy", "exit 0\n")
    shell_script(tmp_path / "bin" / "gemini", "exit 0\n")
    chosen = BackendRegistry(settings(tmp_path)).select()
    assert chosen.backend == "agy"
    assert chosen.notice == (
        "Using the agy backend (Antigravity CLI) because GEMINI_MCP_BACKEND is unset and agy was found at "
        f"{agy.resolve()}. Other backends: gemini — usable now: the Gemini CLI was found at "
        f"{(tmp_path / 'bin' / 'gemini').resolve()}; api — {API_ENABLE}. "
        "Choose one with GEMINI_MCP_BACKEND (gemini, api)."
    )


def test_unset_without_agy_the_gemini_cli_is_chosen_when_found(tmp_path: Path) -> None:
    gemini = shell_script(tmp_path / "bin" / "gemini", "exit 0\n")
    chosen = BackendRegistry(settings(tmp_path, GEMINI_API_KEY="k" * 20)).select()
    assert chosen.backend == "gemini"
    assert chosen.notice == (
        "Using the gemini backend (Gemini CLI) because GEMINI_MCP_BACKEND is unset, agy was not found and the Gemini "
        f"CLI was found at {gemini.resolve()}. Other backends: agy — {AGY_ENABLE}; api — usable now: an API key is "
        "set. Choose one with GEMINI_MCP_BACKEND (agy, api)."
    )


def test_unset_with_no_cli_an_api_key_chooses_the_api(tmp_path: Path) -> None:
    chosen = BackendRegistry(settings(tmp_path, GOOGLE_API_KEY="k" * 20)).select()
    assert chosen.backend == "api"
    assert "agy was not found, the Gemini CLI was not found and an API key is set." in str(chosen.notice)


def test_unset_with_nothing_found_the_default_choice_runs_and_says_why(tmp_path: Path) -> None:
    chosen = BackendRegistry(settings(tmp_path)).select()
    assert chosen.backend == "gemini"
    assert chosen.notice == (
        "Using the gemini backend (Gemini CLI) because GEMINI_MCP_BACKEND is unset, agy was not found, the Gemini CLI "
        f"was not found and no API key is set. Other backends: agy — {AGY_ENABLE}; api — {API_ENABLE}. Choose one "
        "with GEMINI_MCP_BACKEND (agy, api)."
    )


def test_with_nothing_found_the_notice_says_an_api_key_alone_would_do() -> None:
    assert "set GEMINI_API_KEY" in API_ENABLE and "no CLI and no Node" in API_ENABLE


def test_alternatives_name_every_other_backend_and_what_makes_it_usable(tmp_path: Path) -> None:
    made = BackendRegistry(settings(tmp_path, GEMINI_MCP_BACKEND="gemini"))
    assert made.alternatives() == (
        f"Other backends: agy — {AGY_ENABLE}; api — {API_ENABLE}. Choose one with GEMINI_MCP_BACKEND (agy, api)."
    )


def test_the_fallback_model_defaults_per_backend(tmp_path: Path) -> None:
    made = BackendRegistry(settings(tmp_path))
    assert made.fallback_for(BackendName("gemini")) == "gemini-2.5-flash"
    assert made.fallback_for(BackendName("api")) == "gemini-2.5-flash"
    assert made.fallback_for(BackendName("agy")) is None


@pytest.mark.parametrize("value", ["none", "NONE", "off"])
def test_none_disables_the_fallback_everywhere(tmp_path: Path, value: str) -> None:
    made = BackendRegistry(settings(tmp_path, GEMINI_FALLBACK_MODEL=value))
    assert all(made.fallback_for(name) is None for name in names())


def test_an_explicit_fallback_model_applies_to_every_backend(tmp_path: Path) -> None:
    made = BackendRegistry(settings(tmp_path, GEMINI_FALLBACK_MODEL=" gemini-3.8-flash-low "))
    assert made.fallback_for(BackendName("agy")) == "gemini-3.8-flash-low"


def test_the_relay_host_gets_what_agy_reads_beyond_the_allowlist() -> None:
    # A relay host builds agy from the asking server's environment filtered by relevant_env: agy's OAuth token may
    # live behind the session bus, and USE_ADC switches it to Application Default Credentials.
    env = {
        "DBUS_SESSION_BUS_ADDRESS": "unix:path=/run/user/1000/bus",
        "USE_ADC": "1",
        "AGY_CLI_PATH": "/opt/agy",
        "GEMINI_API_KEY": "k",
        "HOME": "/home/u",
        "WINDOWID": "42",
        "OLDPWD": "/tmp",
    }
    assert relevant_env(env) == {k: v for k, v in env.items() if k not in ("WINDOWID", "OLDPWD")}


def test_a_name_or_alias_already_taken_cannot_be_registered_again(tmp_path: Path) -> None:
    twin = BackendEntry(name=BackendName("other"), title="twin", build=lambda s, p: None, aliases=("antigravity",))  # type: ignore[arg-type, return-value]
    with pytest.raises(ValueError, match="antigravity is already registered"):
        register(twin)
    assert "other" not in names()


def test_registered_entries_are_unregistered_by_the_call_register_returns(tmp_path: Path) -> None:
    extra = BackendEntry(name=BackendName("extra"), title="an extra", build=registry.entries()[0].build)
    unregister = register(extra)
    try:
        assert names()[-1] == "extra"
        assert "extra" in BackendRegistry(settings(tmp_path)).backends
    finally:
        unregister()
    assert "extra" not in names()
