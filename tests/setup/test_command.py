"""`gemini-relay setup` as a whole: it shows and writes nothing by default, lists what it found, leaves the CLIs the
relay drives itself alone unless named, and its entries start this installation from any folder."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from gemini_relay import __version__
from gemini_relay.setup.clients import BY_NAME
from gemini_relay.setup.setup_options import CLIENT_NAMES
from tests.executables import relay_command
from tests.setup.homes import RELAY, SetupHome

WAIT = 60.0


def test_a_dry_run_shows_each_found_clients_entry_and_writes_nothing(home: SetupHome) -> None:
    home.file(".codex/config.toml", 'model = "gpt-5.4"\n')
    home.file(".cursor/mcp.json", "{}")
    before = home.snapshot()
    shown = home.setup()
    assert shown.code == 0
    assert home.snapshot() == before
    assert not home.state.exists()  # no record, no token
    assert "Codex CLI: found (~/.codex exists)\n  gemini-relay: would add in ~/.codex/config.toml:" in shown.out
    assert "tool_timeout_sec = 600" in shown.out and f'"command": "{RELAY}"' in shown.out
    assert "VS Code: not found" in shown.out and "Claude Code: not found" in shown.out
    assert shown.out.rstrip().endswith("Nothing was changed. To do it: gemini-relay setup --yes")


def test_the_clis_the_relay_drives_are_written_only_when_named(home: SetupHome) -> None:
    settings = home.file(".gemini/settings.json", '{"ide": {"enabled": false}}\n')
    plain = home.setup("--yes")
    assert "Gemini CLI: found (~/.gemini/settings.json exists); the relay runs this CLI itself" in plain.out
    assert settings.read_text(encoding="utf-8") == '{"ide": {"enabled": false}}\n'
    named = home.setup("--client", "gemini-cli", "--yes")
    assert named.code == 0
    assert home.json(".gemini/settings.json")["mcpServers"]["gemini-relay"]["command"] == RELAY
    removed = home.setup("--remove", "--yes")  # setup wrote it: undone without naming it again
    assert "Gemini CLI: found" in removed.out
    assert settings.read_text(encoding="utf-8") == '{"ide": {"enabled": false}}\n'


def test_with_no_client_found_it_says_how_to_name_one(home: SetupHome) -> None:
    shown = home.setup()
    assert shown.code == 0
    assert "No client found. Name one with --client (claude-code, codex, cursor, vscode" in shown.out


def test_an_unknown_client_is_refused(home: SetupHome) -> None:
    assert home.setup("--client", "emacs").code == 2


def test_the_written_command_starts_this_relay_from_any_folder(home: SetupHome) -> None:
    home.setup("--client", "cursor", "--yes")
    command = home.json(".cursor/mcp.json")["mcpServers"]["gemini-relay"]["command"]
    ran = subprocess.run(
        [command, "--version"], cwd="/", capture_output=True, text=True, timeout=WAIT, check=False, env={}
    )
    assert Path(command).is_absolute()
    assert ran.stdout.strip().startswith(f"gemini-relay {__version__} (the tool surface of gemini-relay ")


def test_python_dash_m_gemini_relay_setup_writes_the_same_entry(home: SetupHome) -> None:
    env = {**os.environ}  # the fixture's HOME, PATH and state dir
    ran = relay_command("setup", "--client", "cursor", "--yes", env=env, timeout=WAIT)
    assert ran.returncode == 0, ran.stderr
    assert home.json(".cursor/mcp.json")["mcpServers"]["gemini-relay"]["command"] == RELAY


def test_the_options_name_every_client_setup_knows() -> None:
    assert tuple(BY_NAME) == CLIENT_NAMES
