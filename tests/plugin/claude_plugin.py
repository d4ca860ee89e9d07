"""The real Claude Code CLI (2.1.332) with this repository's marketplace added and the plugin installed in a home of
its own, its model a fake Messages API on loopback (tests/fakes/fake_messages_api.py), the plugin's relay the
worktree's console script answering from the Gemini API emulator."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from tests.fakes.fake_messages_api import MODEL, FakeMessagesApi
from tests.harness import REPO, Relay
from tests.plugin.gate import RELAY_COMMAND
from tests.real_clients import CLAUDE, require

CLAUDE_TIMEOUT = 180.0
TOOL = "mcp__plugin_gemini-relay_gemini-relay__"  # Claude Code's name prefix for the plugin server's tools
OFFLINE = {
    "DISABLE_TELEMETRY": "1",
    "DISABLE_AUTOUPDATER": "1",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
}


def claude(home: Path, args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    binary = require(CLAUDE, "the Claude Code CLI 2.1.332")
    return subprocess.run(
        [str(binary), *args],
        capture_output=True,
        text=True,
        timeout=CLAUDE_TIMEOUT,
        cwd=cwd,
        env={**env, **OFFLINE, "HOME": str(home)},
        stdin=subprocess.DEVNULL,
        check=False,
    )


def install_plugin(home: Path) -> None:
    """`claude plugin marketplace add <this checkout>` and `claude plugin install gemini-relay@gemini-relay`."""
    home.mkdir(parents=True, exist_ok=True)
    env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}
    added = claude(home, ["plugin", "marketplace", "add", str(REPO)], env, home)
    assert added.returncode == 0 and "Successfully added marketplace: gemini-relay" in added.stdout, added
    installed = claude(home, ["plugin", "install", "gemini-relay@gemini-relay"], env, home)
    assert installed.returncode == 0, installed
    assert "Successfully installed plugin: gemini-relay@gemini-relay" in installed.stdout, installed


def prompt(home: Path, relay: Relay, fake: FakeMessagesApi, text: str, **extra: str) -> str:
    """`claude -p text` in the world's project against `fake`, with the world's env (the plugin's relay and gate
    inherit it); its stream-json output."""
    env = {
        **relay.env,
        "GEMINI_MCP_BACKEND": "api",
        "GEMINI_RELAY_COMMAND": str(RELAY_COMMAND),
        "GEMINI_RELAY_STATE_DIR": str(relay.home / ".local" / "state" / "gemini-relay"),  # the fixture stops its host
        "XDG_STATE_HOME": str(relay.base / "gate-state"),
        "ANTHROPIC_BASE_URL": fake.base_url,
        "ANTHROPIC_API_KEY": "sk-ant-fake",
        "ENABLE_TOOL_SEARCH": "false",  # else MCP tools wait behind a ToolSearch tool and never reach `tools`
        **extra,
    }
    args = ["-p", text, "--output-format", "stream-json", "--verbose", "--model", MODEL]
    done = claude(home, args, env, relay.project)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout


def user_text(request: dict[str, Any]) -> str:
    """Every text the request's user messages carry (a command expands there; a Stop hook's reason arrives there)."""
    texts: list[str] = []
    for message in request.get("messages", []):
        content = message.get("content")
        if message.get("role") != "user":
            continue
        if isinstance(content, str):
            texts.append(content)
        else:
            texts += [b.get("text", "") for b in content or [] if b.get("type") == "text"]
    return "\n".join(texts)


def offered(request: dict[str, Any]) -> set[str]:
    return {tool["name"] for tool in request.get("tools", [])}


def events(stdout: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]
