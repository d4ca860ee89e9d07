"""The Claude Code CLI (2.1.332) runs the README's own `claude mcp add` lines in a temporary home, and
`claude mcp list` (its offline health check: it connects and initializes) reports the server connected."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.harness import REPO, Relay
from tests.real_clients import CLAUDE, installed_version, require
from tests.transports.http_server import http_server

CLAUDE_TIMEOUT = 180.0


# Where the README's install puts the console script, `"$PWD/.venv/bin/gemini-relay"` run from the clone: here, the
# script beside the interpreter running the tests (the clone's own .venv under scripts/test).
INSTALLED = Path(sys.executable).parent / "gemini-relay"


def readme_line(*, http: bool) -> str:
    """The README's `claude mcp add` line for stdio, or the one for HTTP, with the clone's path as the shell sees it."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    lines: list[str] = re.findall(r"^claude mcp add .*$", readme, re.MULTILINE)
    (line,) = [line for line in lines if ("--transport http" in line) == http]
    return line.replace('"$PWD/.venv/bin/gemini-relay"', f'"{INSTALLED}"')


def claude(relay: Relay, command: str, **env: str) -> subprocess.CompletedProcess[str]:
    """Run `command` in a shell where `claude` and `gemini-relay` are on PATH, in a home of its own."""
    binary = require(CLAUDE, "the Claude Code CLI 2.1.332")
    bin_dir = relay.base / "claude-bin"
    bin_dir.mkdir(exist_ok=True)
    if not (bin_dir / "claude").exists():
        (bin_dir / "claude").symlink_to(binary)
    home = relay.base / "claude-home"
    home.mkdir(exist_ok=True)
    path = os.pathsep.join([str(bin_dir), str(Path(sys.executable).parent), relay.env["PATH"]])
    environment = {
        **relay.env,  # the server Claude Code starts inherits this world (emulator, state dir, CLI home)
        "HOME": str(home),
        "PATH": path,
        "DISABLE_AUTOUPDATER": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        **env,
    }
    return subprocess.run(
        ["bash", "-c", command],
        capture_output=True,
        text=True,
        timeout=CLAUDE_TIMEOUT,
        cwd=relay.project,
        env=environment,
        stdin=subprocess.DEVNULL,
        check=False,
    )


def test_claude_code_adds_the_server_with_the_readme_line_and_lists_it_connected(relay: Relay) -> None:
    added = claude(relay, readme_line(http=False))
    listed = claude(relay, "claude mcp list")
    assert added.returncode == 0, added.stderr
    assert listed.returncode == 0, listed.stderr
    connected = rf"^gemini-relay: {re.escape(str(INSTALLED))} +- ✔ Connected$"
    assert re.search(connected, listed.stdout, re.MULTILINE), listed.stdout


def test_the_readme_line_starts_the_relay_by_absolute_path_not_a_bare_name_off_path() -> None:
    line = readme_line(http=False)
    assert line.endswith(f'-- "{INSTALLED}"'), line


def test_claude_code_connects_over_http_with_the_token_and_is_refused_without_it(relay: Relay) -> None:
    with http_server(relay, token="cc-token-1") as server:
        line = readme_line(http=True).replace("http://127.0.0.1:8765/mcp", server.url)
        added = claude(relay, line, GEMINI_RELAY_HTTP_TOKEN="cc-token-1")
        wrong = claude(relay, line.replace("gemini-relay-http", "wrong-token"), GEMINI_RELAY_HTTP_TOKEN="guess")
        listed = claude(relay, "claude mcp list")
    assert added.returncode == 0 and wrong.returncode == 0, added.stderr + wrong.stderr
    assert f"gemini-relay-http: {server.url} (HTTP) - ✔ Connected" in listed.stdout, listed.stdout
    assert f"wrong-token: {server.url} (HTTP) - ✘ Failed to connect" in listed.stdout
    assert "HTTP 401" in listed.stdout
    assert "cc-token-1" not in listed.stdout + relay.stderr()


def test_the_readme_lines_for_stdio_and_http_both_go_into_one_home_under_their_own_names(relay: Relay) -> None:
    stdio = claude(relay, readme_line(http=False))
    http = claude(relay, readme_line(http=True), GEMINI_RELAY_HTTP_TOKEN="cc-token-2")
    assert stdio.returncode == 0, stdio.stderr
    assert http.returncode == 0, http.stdout + http.stderr  # not "MCP server gemini-relay already exists"


def test_a_misconfigured_server_is_listed_connected_so_claude_code_can_show_its_reason(relay: Relay) -> None:
    # A misspelt backend once made the server exit before initialize: "✘ Failed to connect — Connection closed".
    added = claude(relay, "claude mcp add gemini-relay --env GEMINI_MCP_BACKEND=gemni -- gemini-relay")
    listed = claude(relay, "claude mcp list")
    assert added.returncode == 0, added.stderr
    assert re.search(r"^gemini-relay: gemini-relay +- ✔ Connected$", listed.stdout, re.MULTILINE), listed.stdout


def test_claude_code_binary_is_the_pinned_version() -> None:
    assert installed_version("@anthropic-ai/claude-code") == "2.1.332"
