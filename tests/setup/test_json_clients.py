"""Setup with each JSON-configured client (Cursor, VS Code, Claude Desktop, the Gemini CLI, agy, and Claude Code
when no `claude` is on PATH): the entry it writes reads back with json in that client's shape, beside what the file
held; a re-run finds it present; a different entry is left alone; --remove puts the file back byte for byte."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.setup.homes import RELAY, TRUST, SetupHome, snapshot

# client, its file under the home, the servers key, the stdio entry it should hold (Claude Desktop's also names the
# project root: its servers start outside any project).
CASES = [
    ("cursor", ".cursor/mcp.json", "mcpServers", {"command": RELAY, "args": [], "env": TRUST}),
    ("vscode", ".config/Code/User/mcp.json", "servers", {"type": "stdio", "command": RELAY, "args": [], "env": TRUST}),
    ("claude-desktop", ".config/Claude/claude_desktop_config.json", "mcpServers", {"command": RELAY, "args": []}),
    ("gemini-cli", ".gemini/settings.json", "mcpServers", {"command": RELAY, "args": [], "env": TRUST}),
    ("agy", ".gemini/config/mcp_config.json", "mcpServers", {"command": RELAY, "args": [], "env": TRUST}),
    ("claude-code", ".claude.json", "mcpServers", {"type": "stdio", "command": RELAY, "args": [], "env": TRUST}),
]
IDS = [case[0] for case in CASES]
THEIRS = {"command": "npx", "args": ["-y", "their-server"], "env": {"THEIR_KEY": "secret-value"}}


def expected(home: SetupHome, client: str, entry: dict[str, Any]) -> dict[str, Any]:
    if client == "claude-desktop":
        return {**entry, "env": {**TRUST, "GEMINI_RELAY_PROJECT_ROOT": str(home.project)}}
    return entry


def original_text(key: str) -> str:
    """A user's file: four-space indentation, another server, another setting, no final newline."""
    return json.dumps({"theme": "dark", key: {"theirs": THEIRS}}, indent=4)


@pytest.mark.parametrize(("client", "relative", "key", "entry"), CASES, ids=IDS)
def test_setup_adds_the_entry_beside_what_the_file_holds_and_keeps_a_backup(
    home: SetupHome, client: str, relative: str, key: str, entry: dict[str, Any]
) -> None:
    before = original_text(key)
    path = home.file(relative, before)
    done = home.setup("--client", client, "--yes")
    data = home.json(relative)
    assert done.code == 0, done.out
    assert data[key]["gemini-relay"] == expected(home, client, entry)
    assert data[key]["theirs"] == THEIRS and data["theme"] == "dark"
    assert path.read_text(encoding="utf-8").splitlines()[1].startswith('    "')  # the file's own indentation
    assert Path(f"{path}.gemini-relay-backup").read_text(encoding="utf-8") == before
    assert "gemini-relay: added" in done.out and "secret-value" not in done.out


@pytest.mark.parametrize(("client", "relative", "key", "entry"), CASES, ids=IDS)
def test_a_second_setup_finds_the_entry_already_present_and_changes_nothing(
    home: SetupHome, client: str, relative: str, key: str, entry: dict[str, Any]
) -> None:
    home.file(relative, original_text(key))
    home.setup("--client", client, "--yes")
    written = home.snapshot()
    again = home.setup("--client", client, "--yes")
    assert again.code == 0
    assert "gemini-relay: already present" in again.out
    assert home.snapshot() == written


@pytest.mark.parametrize(("client", "relative", "key", "entry"), CASES, ids=IDS)
def test_remove_puts_the_file_back_byte_for_byte_and_drops_the_backup(
    home: SetupHome, client: str, relative: str, key: str, entry: dict[str, Any]
) -> None:
    home.file(relative, original_text(key))
    before = home.snapshot()
    home.setup("--client", client, "--yes")
    removed = home.setup("--client", client, "--remove", "--yes")
    assert removed.code == 0, removed.out
    assert "restored byte for byte" in removed.out
    assert home.snapshot() == before
    assert home.record() is None


@pytest.mark.parametrize(("client", "relative", "key", "entry"), CASES, ids=IDS)
def test_a_different_entry_of_that_name_is_left_alone_and_reported_unless_forced(
    home: SetupHome, client: str, relative: str, key: str, entry: dict[str, Any]
) -> None:
    mine = {"command": "/opt/my/gemini-relay", "env": {"GEMINI_API_KEY": "my-key"}}
    text = json.dumps({key: {"gemini-relay": mine}}, indent=2) + "\n"
    home.file(relative, text)
    kept = home.setup("--client", client, "--yes")
    unremoved = home.setup("--client", client, "--remove", "--yes")
    assert (kept.code, unremoved.code) == (0, 0)
    assert "gemini-relay: differs (command /opt/my/gemini-relay); left alone (--force replaces it)" in kept.out
    assert "left alone (--force removes it)" in unremoved.out
    assert home.file(relative).read_text(encoding="utf-8") == text
    assert "my-key" not in kept.out + unremoved.out
    forced = home.setup("--client", client, "--yes", "--force")
    assert "gemini-relay: replaced" in forced.out
    assert home.json(relative)[key]["gemini-relay"] == expected(home, client, entry)
    home.setup("--client", client, "--remove", "--yes")
    assert home.file(relative).read_text(encoding="utf-8") == text  # the user's entry is back


def test_remove_after_the_file_changed_takes_out_only_the_entry_and_names_the_backup(home: SetupHome) -> None:
    home.file(".cursor/mcp.json", original_text("mcpServers"))
    home.setup("--client", "cursor", "--yes")
    data = home.json(".cursor/mcp.json")
    data["mcpServers"]["later"] = {"command": "added-after-setup"}
    home.file(".cursor/mcp.json", json.dumps(data, indent=4))
    removed = home.setup("--client", "cursor", "--remove", "--yes")
    after = home.json(".cursor/mcp.json")
    assert removed.code == 0
    assert set(after["mcpServers"]) == {"theirs", "later"}
    assert "had changed since setup, so only the entries went" in removed.out
    assert "~/.cursor/mcp.json.gemini-relay-backup" in removed.out
    assert home.file(".cursor/mcp.json.gemini-relay-backup").exists()


def test_a_file_setup_made_goes_on_remove_with_the_folders_it_made(home: SetupHome) -> None:
    before = home.snapshot()
    made = home.setup("--client", "vscode", "--yes")
    assert home.json(".config/Code/User/mcp.json")["servers"]["gemini-relay"]["type"] == "stdio"
    removed = home.setup("--client", "vscode", "--remove", "--yes")
    assert "VS Code: not found; named with --client" in made.out
    assert "deleted (setup had made it" in removed.out
    assert home.snapshot() == before  # no ~/.config left behind


def test_a_json_file_with_comments_is_left_alone_with_the_entry_to_add_by_hand(home: SetupHome) -> None:
    text = '{\n  // my servers\n  "servers": {}\n}\n'
    home.file(".config/Code/User/mcp.json", text)
    refused = home.setup("--client", "vscode", "--yes")
    assert refused.code == 1
    assert "cannot read ~/.config/Code/User/mcp.json: it is not plain JSON" in refused.out
    assert "add it by hand" in refused.out and f'"command": "{RELAY}"' in refused.out
    assert home.file(".config/Code/User/mcp.json").read_text(encoding="utf-8") == text


def test_a_linked_config_stays_a_link_and_its_target_is_written_and_restored(home: SetupHome, tmp_path: Path) -> None:
    dotfiles = tmp_path / "dotfiles" / "cursor-mcp.json"
    dotfiles.parent.mkdir()
    dotfiles.write_text(original_text("mcpServers"), encoding="utf-8")
    link = home.file(".cursor/mcp.json")
    link.parent.mkdir()
    link.symlink_to(dotfiles)
    before = snapshot(tmp_path / "dotfiles")
    home.setup("--client", "cursor", "--yes")
    assert link.is_symlink() and link.readlink() == dotfiles
    assert "gemini-relay" in json.loads(dotfiles.read_text(encoding="utf-8"))["mcpServers"]
    home.setup("--client", "cursor", "--remove", "--yes")
    assert link.is_symlink()
    assert snapshot(tmp_path / "dotfiles") == before


def test_the_http_entry_carries_the_servers_token_and_sits_beside_the_stdio_one(home: SetupHome) -> None:
    home.file(".cursor/mcp.json", original_text("mcpServers"))
    home.file(".cursor/mcp.json").chmod(0o644)
    before = home.snapshot()
    home.setup("--client", "cursor", "--yes")
    added = home.setup("--client", "cursor", "--http", "--yes")
    token = (home.state / "http-token").read_text(encoding="utf-8").strip()
    servers = home.json(".cursor/mcp.json")["mcpServers"]
    assert added.code == 0, added.out
    assert servers["gemini-relay-http"] == {
        "url": "http://127.0.0.1:8765/mcp",
        "headers": {"Authorization": f"Bearer {token}"},
    }
    assert servers["gemini-relay"]["command"] == RELAY
    assert (home.state / "http-token").stat().st_mode & 0o777 == 0o600
    assert home.file(".cursor/mcp.json").stat().st_mode & 0o777 == 0o600  # it holds the token now
    assert token not in added.out
    assert "Start the server with: gemini-relay --http 127.0.0.1:8765" in added.out
    home.setup("--client", "cursor", "--remove", "--yes")
    assert home.snapshot() == before  # both entries out, the file's 0644 back


def test_claude_desktop_gets_no_http_entry_and_says_why(home: SetupHome) -> None:
    home.file(".config/Claude/claude_desktop_config.json", "{}")
    refused = home.setup("--http", "--yes")
    assert "Claude Desktop: found (~/.config/Claude exists); no HTTP entry: Claude Desktop reads only stdio" in (
        refused.out
    )
    assert home.file(".config/Claude/claude_desktop_config.json").read_text(encoding="utf-8") == "{}"
    assert "No client found" not in refused.out
