"""child_env: the subprocess environment is an allowlist plus NO_COLOR, never the server's whole environment."""

from __future__ import annotations

from gemini_relay.backends.env import child_env

# What the CLI may see: the child gets these as they are.
ALLOWED = {
    "HOME": "/home/u",
    "PATH": "/usr/bin:/bin",
    "USER": "u",
    "SHELL": "/bin/bash",
    "LANG": "C.UTF-8",
    "TERM": "xterm",
    "TMPDIR": "/tmp/u",
    "LC_ALL": "C.UTF-8",
    "XDG_CONFIG_HOME": "/home/u/.config",
    "GEMINI_API_KEY": "key-1",
    "GOOGLE_API_KEY": "key-2",
    "GOOGLE_APPLICATION_CREDENTIALS": "/home/u/adc.json",
    "GOOGLE_CLOUD_PROJECT": "proj",
    "CLOUDSDK_CONFIG": "/home/u/.gcloud",
    "GEMINI_CLI_HOME": "/home/u/cli",
    "GEMINI_CLI_TRUST_WORKSPACE": "true",
    "HTTPS_PROXY": "http://proxy:3128",
    "no_proxy": "localhost",
    "NODE_EXTRA_CA_CERTS": "/etc/ssl/corp.pem",
}
SERVER_ENV = {
    **ALLOWED,
    # Not the CLI's business:
    "FAKE_SECRET_TOKEN": "s3cr3t",
    "AWS_SECRET_ACCESS_KEY": "aws",
    "GITHUB_TOKEN": "ghp",
    "OPENAI_API_KEY": "sk",
    "PYTHONPATH": "/src",
    "VIRTUAL_ENV": "/venv",
    "NODE_OPTIONS": "--require /tmp/evil.js",
    "LD_PRELOAD": "/tmp/evil.so",
    "FORCE_COLOR": "3",
    "NO_COLOR": "0",
    # The relay's own settings:
    "GEMINI_RELAY_PROJECT_ROOT": "/work",
    "GEMINI_RELAY_MAX_CONCURRENT": "2",
    "GEMINI_MCP_TIMEOUT": "10",
    "GEMINI_MCP_BACKEND": "gemini",
    "GEMINI_MCP_TEST_TOOLS": "1",
}


def test_only_allowlisted_variables_reach_the_child() -> None:
    assert child_env(SERVER_ENV) == {**ALLOWED, "NO_COLOR": "1"}


def test_unrelated_secrets_are_dropped() -> None:
    env = child_env(SERVER_ENV)
    for key in ("FAKE_SECRET_TOKEN", "AWS_SECRET_ACCESS_KEY", "GITHUB_TOKEN", "OPENAI_API_KEY"):
        assert key not in env
    assert "s3cr3t" not in env.values()


def test_variables_that_change_how_node_or_the_loader_runs_are_dropped() -> None:
    env = child_env(SERVER_ENV)
    assert "NODE_OPTIONS" not in env
    assert "LD_PRELOAD" not in env
    assert "FORCE_COLOR" not in env


def test_the_relays_own_settings_are_not_passed_although_they_start_with_gemini() -> None:
    env = child_env(SERVER_ENV)
    assert not [key for key in env if key.startswith(("GEMINI_RELAY_", "GEMINI_MCP_"))]
    assert env["GEMINI_API_KEY"] == "key-1"


def test_no_color_is_always_1() -> None:
    assert child_env({})["NO_COLOR"] == "1"
    assert child_env({"NO_COLOR": "0"})["NO_COLOR"] == "1"


def test_extra_variables_are_added_last_and_win() -> None:
    env = child_env(SERVER_ENV, {"GEMINI_CLI_NO_RELAUNCH": "true", "HOME": "/isolated", "NO_COLOR": "yes"})
    assert env["GEMINI_CLI_NO_RELAUNCH"] == "true"
    assert env["HOME"] == "/isolated"
    assert env["NO_COLOR"] == "yes"


def test_extras_may_set_variables_the_allowlist_would_drop() -> None:
    assert child_env({}, {"NODE_OPTIONS": "--max-old-space-size=8192"}) == {
        "NO_COLOR": "1",
        "NODE_OPTIONS": "--max-old-space-size=8192",
    }


def test_prefixes_match_the_start_only_and_are_case_sensitive() -> None:
    env = child_env({"MY_GEMINI_KEY": "x", "gemini_api_key": "y", "GOOGLE": "z", "PATHS": "p"})
    assert env == {"NO_COLOR": "1"}


def test_the_input_mapping_is_not_modified() -> None:
    before = dict(SERVER_ENV)
    child_env(SERVER_ENV, {"EXTRA": "1"})
    assert before == SERVER_ENV
