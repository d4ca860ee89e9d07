"""Setup with the Codex CLI: `~/.codex/config.toml` gains a `[mcp_servers.gemini-relay]` table that tomllib reads
back with tool_timeout_sec and a prompt-free approval for exactly the tools the server lists with readOnlyHint; the
user's file is kept byte for byte around it, and --remove takes exactly that text out again."""

from __future__ import annotations

import contextlib
import os
import pty
import select
import signal
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from gemini_relay.app import build_deps
from gemini_relay.config import Settings
from gemini_relay.core.vocabulary import BackendName
from gemini_relay.server.relay import RelayServer
from tests.inmemory.scripted import ScriptedBackend
from tests.setup.homes import RELAY, TRUST, SetupHome

CONFIG = ".codex/config.toml"
USERS = 'model = "gpt-5.4"\napproval_policy = "on-request"  # mine\n\n[profiles.deep]\nmodel = "o3"'  # no final \n


def servers(home: SetupHome) -> dict[str, Any]:
    data = tomllib.loads(home.file(CONFIG).read_text(encoding="utf-8"))
    found: dict[str, Any] = data["mcp_servers"]
    return found


async def read_only_on_the_wire(tmp_path: Path) -> set[str]:
    """The tools a real server lists (every toolset on) whose annotations say readOnlyHint."""
    env = {
        "HOME": str(tmp_path),
        "PATH": str(tmp_path),
        "GEMINI_RELAY_STATE_DIR": str(tmp_path / "wire-state"),
        "GEMINI_RELAY_PROJECT_ROOT": str(tmp_path),
        "GEMINI_MCP_BACKEND": "gemini",
        "GEMINI_RELAY_HOST": "off",
        "GEMINI_RELAY_TOOLSETS": "all",
    }
    deps = build_deps(Settings.from_env(env), backends={BackendName("gemini"): ScriptedBackend()})
    async with deps.serving(), anyio.create_task_group() as background:
        deps.background = background
        async with Client(RelayServer(deps).build(), mode="legacy") as client:
            tools = (await client.list_tools()).tools
        background.cancel_scope.cancel()
    return {tool.name for tool in tools if tool.annotations is not None and tool.annotations.read_only_hint}


@pytest.mark.anyio
async def test_the_table_reads_back_with_the_timeout_and_approves_exactly_the_read_only_tools(
    home: SetupHome, tmp_path: Path
) -> None:
    home.file(CONFIG, USERS)
    done = home.setup("--client", "codex", "--yes")
    entry = servers(home)["gemini-relay"]
    approved = {tool for tool, settings in entry["tools"].items() if settings == {"approval_mode": "approve"}}
    read_only = await read_only_on_the_wire(tmp_path)
    assert done.code == 0, done.out
    assert (entry["command"], entry["args"], entry["env"]) == (RELAY, [], TRUST)
    assert entry["tool_timeout_sec"] == 600
    assert entry["required"] is True  # `codex exec` waits for it before its first turn
    assert "GEMINI_API_KEY" in entry["env_vars"]  # Codex passes a stdio server only what it is told to forward
    assert approved == set(entry["tools"]) == read_only
    assert {"gemini-ask", "gemini-run", "gemini-image"}.isdisjoint(approved)  # left to the user's approval policy
    assert home.file(CONFIG).read_text(encoding="utf-8").startswith(USERS + "\n\n# Written by `gemini-relay setup`")
    assert home.file(CONFIG + ".gemini-relay-backup").read_text(encoding="utf-8") == USERS


def test_a_second_setup_finds_the_table_already_present(home: SetupHome) -> None:
    home.file(CONFIG, USERS)
    home.setup("--client", "codex", "--yes")
    written = home.snapshot()
    again = home.setup("--client", "codex", "--yes")
    assert "gemini-relay: already present" in again.out
    assert home.snapshot() == written


def test_remove_restores_the_file_byte_for_byte(home: SetupHome) -> None:
    home.file(CONFIG, USERS)
    before = home.snapshot()
    home.setup("--client", "codex", "--yes")
    home.setup("--client", "codex", "--http", "--yes")
    removed = home.setup("--remove", "--yes")
    assert removed.code == 0, removed.out
    assert home.snapshot() == before


def test_remove_after_the_user_edited_the_file_takes_out_exactly_setups_text(home: SetupHome) -> None:
    home.file(CONFIG, USERS)
    home.setup("--client", "codex", "--yes")
    later = '\n[mcp_servers.theirs]\ncommand = "their-server"\n'
    with home.file(CONFIG).open("a", encoding="utf-8") as config:
        config.write(later)
    removed = home.setup("--client", "codex", "--remove", "--yes")
    assert removed.code == 0, removed.out
    assert home.file(CONFIG).read_text(encoding="utf-8") == USERS + later
    assert set(servers(home)) == {"theirs"}


def test_a_different_table_of_that_name_is_left_alone_unless_forced_and_comes_back_on_remove(
    home: SetupHome,
) -> None:
    mine = '[mcp_servers.gemini-relay]\ncommand = "/opt/gemini-relay"\nenv = { GEMINI_API_KEY = "k-123" }\n'
    text = USERS + "\n\n" + mine
    home.file(CONFIG, text)
    kept = home.setup("--client", "codex", "--yes")
    assert "gemini-relay: differs (command /opt/gemini-relay); left alone (--force replaces it)" in kept.out
    assert home.file(CONFIG).read_text(encoding="utf-8") == text
    forced = home.setup("--client", "codex", "--yes", "--force")
    assert forced.code == 0, forced.out
    assert servers(home)["gemini-relay"]["command"] == RELAY
    assert home.file(CONFIG).read_text(encoding="utf-8").startswith(USERS)
    home.setup("--client", "codex", "--remove", "--yes")
    assert home.file(CONFIG).read_text(encoding="utf-8") == text


def test_the_http_table_has_the_url_and_token_and_the_file_becomes_private(home: SetupHome) -> None:
    home.file(CONFIG, USERS).chmod(0o644)
    home.setup("--client", "codex", "--yes")
    added = home.setup("--client", "codex", "--http", "127.0.0.1:9123", "--yes")
    token = (home.state / "http-token").read_text(encoding="utf-8").strip()
    entry = servers(home)["gemini-relay-http"]
    assert added.code == 0, added.out
    assert entry["url"] == "http://127.0.0.1:9123/mcp"
    assert entry["http_headers"] == {"Authorization": f"Bearer {token}"}
    assert entry["tool_timeout_sec"] == 600 and "required" not in entry  # a server Codex does not start
    assert "gemini-relay" in servers(home)
    assert home.file(CONFIG).stat().st_mode & 0o777 == 0o600
    assert token not in added.out


def test_a_file_that_is_not_toml_is_left_alone(home: SetupHome) -> None:
    home.file(CONFIG, "model = \n")
    refused = home.setup("--client", "codex", "--yes")
    assert refused.code == 1
    assert "cannot read ~/.codex/config.toml: it is not valid TOML" in refused.out
    assert home.file(CONFIG).read_text(encoding="utf-8") == "model = \n"


def test_approve_all_lets_every_tool_run_without_a_prompt_and_says_so(home: SetupHome) -> None:
    home.file(CONFIG, USERS)
    done = home.setup("--client", "codex", "--approve", "all", "--yes")
    entry = servers(home)["gemini-relay"]
    assert done.code == 0, done.out
    assert entry["default_tools_approval_mode"] == "approve" and "tools" not in entry
    assert "Codex runs every gemini-relay tool without a prompt, `codex exec` included" in done.out


def test_without_approve_all_the_output_tells_a_codex_exec_user_what_it_refuses(home: SetupHome) -> None:
    home.file(CONFIG, USERS)
    done = home.setup("--client", "codex", "--yes")  # no terminal to ask on: read-only
    assert done.code == 0, done.out
    assert "default_tools_approval_mode" not in servers(home)["gemini-relay"]
    said = " ".join(done.out.split())  # the note is wrapped
    assert "Codex asks before gemini-ask," in said and "`codex exec` cannot ask and refuses them" in said
    assert "gemini-relay setup --client codex --approve all --yes" in done.out


def test_changing_the_approval_updates_setups_own_table_and_remove_still_restores_the_file(home: SetupHome) -> None:
    home.file(CONFIG, USERS)
    before = home.snapshot()
    home.setup("--client", "codex", "--yes")
    updated = home.setup("--client", "codex", "--approve", "all", "--yes")  # no --force: setup's own entry
    assert updated.code == 0, updated.out
    assert "gemini-relay: updated in ~/.codex/config.toml" in updated.out
    assert servers(home)["gemini-relay"]["default_tools_approval_mode"] == "approve"
    assert home.file(CONFIG).read_text(encoding="utf-8").count("[mcp_servers.gemini-relay]") == 1
    back = home.setup("--client", "codex", "--approve", "read-only", "--yes")
    assert "gemini-relay: updated" in back.out and "default_tools_approval_mode" not in servers(home)["gemini-relay"]
    removed = home.setup("--client", "codex", "--remove", "--yes")
    assert removed.code == 0, removed.out
    assert home.snapshot() == before


def test_from_a_terminal_setup_asks_whether_codex_may_run_every_tool_and_writes_the_answer(home: SetupHome) -> None:
    home.file(CONFIG, USERS)
    leader, follower = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "gemini_relay", "setup", "--client", "codex", "--yes"],
        stdin=follower,
        stdout=follower,
        stderr=subprocess.PIPE,
        env={**os.environ},
        start_new_session=True,
    )
    os.close(follower)
    seen = b""
    try:
        while b"[y/N]" not in seen:
            ready, _, _ = select.select([leader], [], [], 60)
            assert ready, f"no question within 60 s: {seen!r}"
            seen += os.read(leader, 4096)
        os.write(leader, b"y\n")
        assert process.wait(timeout=60) == 0
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        with contextlib.suppress(OSError):
            while chunk := os.read(leader, 4096):  # the rest of the report (EIO once the process is gone)
                seen += chunk
        os.close(leader)
        if process.stderr is not None:
            process.stderr.close()
    assert b"may the relay's tools that start Gemini runs (gemini-ask" in seen
    assert servers(home)["gemini-relay"]["default_tools_approval_mode"] == "approve"
