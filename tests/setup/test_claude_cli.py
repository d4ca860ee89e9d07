"""Setup through the real Claude Code CLI (2.1.332, offline, in a temporary home): `setup --yes` leaves `claude mcp
list` showing the relay connected over stdio and, beside it under its own name, over HTTP with the token; `setup
--remove` puts every config file back byte for byte and deletes the files setup's writes created. A `claude` that
fails is reported, and nothing is left behind."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from tests.harness import Relay
from tests.setup.homes import SetupHome, snapshot
from tests.test_claude_code import claude
from tests.transports.http_server import http_server

# Claude Code's own logs of each `claude mcp list` health check: written by that check, not by setup.
CHECK_LOGS = (".cache",)


def claude_home(relay: Relay) -> Path:
    return relay.base / "claude-home"


def test_setup_yes_shows_connected_in_claude_mcp_list_and_remove_puts_the_home_back(relay: Relay) -> None:
    state = {"GEMINI_RELAY_STATE_DIR": str(relay.base / "relay-state"), "GEMINI_RELAY_HTTP_TOKEN": "cc-setup-1"}
    first = claude(relay, "claude mcp list", **state)  # a home Claude Code has run in
    before = snapshot(claude_home(relay), skip=CHECK_LOGS)
    with http_server(relay, token="cc-setup-1") as server:
        stdio = claude(relay, "gemini-relay setup --yes", **state)
        http = claude(relay, f"gemini-relay setup --http 127.0.0.1:{server.port} --yes", **state)
        listed = claude(relay, "claude mcp list", **state)
    removed = claude(relay, "gemini-relay setup --remove --yes", **state)
    assert first.returncode == 0, first.stderr
    assert (stdio.returncode, http.returncode) == (0, 0), stdio.stdout + stdio.stderr + http.stdout + http.stderr
    assert "Claude Code: found (claude on PATH" in stdio.stdout
    assert re.search(r"^gemini-relay: \S+/gemini-relay +- ✔ Connected$", listed.stdout, re.MULTILINE), listed.stdout
    assert f"gemini-relay-http: {server.url} (HTTP) - ✔ Connected" in listed.stdout, listed.stdout
    assert removed.returncode == 0, removed.stdout + removed.stderr
    assert "~/.claude.json: restored byte for byte" in removed.stdout
    assert snapshot(claude_home(relay), skip=CHECK_LOGS) == before
    assert "cc-setup-1" not in stdio.stdout + http.stdout + removed.stdout


def test_on_a_home_claude_code_never_ran_in_remove_leaves_no_file_behind(relay: Relay) -> None:
    state = {"GEMINI_RELAY_STATE_DIR": str(relay.base / "relay-state")}
    added = claude(relay, "gemini-relay setup --client claude-code --yes", **state)
    config = json.loads((claude_home(relay) / ".claude.json").read_text(encoding="utf-8"))
    removed = claude(relay, "gemini-relay setup --remove --yes", **state)
    assert added.returncode == 0, added.stdout + added.stderr
    assert config["mcpServers"]["gemini-relay"]["type"] == "stdio"
    assert "~/.claude.json: deleted (setup had made it" in removed.stdout, removed.stdout
    assert snapshot(claude_home(relay)) == {}  # nor the CLI's backups/ copy, nor ~/.claude


def test_a_different_user_scope_entry_is_reported_and_replaced_only_when_forced(relay: Relay) -> None:
    state = {"GEMINI_RELAY_STATE_DIR": str(relay.base / "relay-state")}
    claude(relay, "claude mcp add -s user gemini-relay -- /bin/false", **state)
    kept = claude(relay, "gemini-relay setup --client claude-code --yes", **state)
    forced = claude(relay, "gemini-relay setup --client claude-code --yes --force", **state)
    entry = json.loads((claude_home(relay) / ".claude.json").read_text(encoding="utf-8"))["mcpServers"]["gemini-relay"]
    assert "gemini-relay: differs (command /bin/false); left alone (--force replaces it)" in kept.stdout
    assert forced.returncode == 0, forced.stdout + forced.stderr
    assert entry["command"].endswith("/gemini-relay") and entry["env"] == {"GEMINI_CLI_TRUST_WORKSPACE": "true"}


def test_a_failing_claude_cli_is_reported_and_leaves_no_backup_or_record(home: SetupHome) -> None:
    config = home.file(".claude.json", '{"numStartups": 3}\n')
    fake = Path(os.environ["PATH"]) / "claude"
    fake.write_text("#!/bin/sh\necho 'MCP config is locked' >&2\nexit 1\n", encoding="utf-8")
    fake.chmod(0o755)
    before = home.snapshot()
    failed = home.setup("--client", "claude-code", "--yes")
    assert failed.code == 1
    assert "not written: `claude mcp add-json` exited 1: MCP config is locked" in failed.out
    assert home.snapshot() == before and config.read_text(encoding="utf-8") == '{"numStartups": 3}\n'
    assert home.record() is None


def test_with_no_network_at_all_setup_and_remove_through_the_cli_leave_nothing_behind(relay: Relay) -> None:
    if subprocess.run(["unshare", "-n", "true"], capture_output=True, check=False).returncode != 0:
        pytest.skip("no network namespace here (unshare -n needs root or user namespaces)")
    state = {"GEMINI_RELAY_STATE_DIR": str(relay.base / "relay-state")}
    settings = claude_home(relay) / ".claude" / "settings.json"  # a ~/.claude that was there before
    settings.parent.mkdir(parents=True)
    settings.write_text("{}\n", encoding="utf-8")
    before = snapshot(claude_home(relay))
    loud = "unset CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC DISABLE_AUTOUPDATER; unshare -n"  # as a user's shell is
    added = claude(relay, f"{loud} gemini-relay setup --client claude-code --yes", **state)
    removed = claude(relay, f"{loud} gemini-relay setup --client claude-code --remove --yes", **state)
    assert added.returncode == 0, added.stdout + added.stderr
    assert removed.returncode == 0, removed.stdout + removed.stderr
    assert snapshot(claude_home(relay)) == before  # no telemetry left in ~/.claude to send later
