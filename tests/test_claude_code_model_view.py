"""What Claude Code's model is given: the real Claude Code CLI (2.1.332) calls a relay tool for a fake Messages API
on loopback (its model), and the next Messages request carries the tool_result — exactly what the model reads.
Claude Code hands the model `JSON.stringify(structuredContent)` alone when a result has it, so that JSON must hold
the whole reply: a jsonSchema answer's conversation id and notices, gemini-models' readable listing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.fakes.fake_messages_api import MODEL, FakeMessagesApi, fake_messages_api
from tests.harness import Relay
from tests.real_clients import CLAUDE, require

CLAUDE_TIMEOUT = 180.0
SERVER = "gemini-relay"
PERSON = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


def model_is_given(relay: Relay, tool: str, arguments: dict[str, Any], **env: str) -> str:
    """Run `claude -p` whose model calls `tool` with `arguments` once; the text of the tool_result it was given."""
    binary = require(CLAUDE, "the Claude Code CLI 2.1.332")
    name = f"mcp__{SERVER}__{tool}"
    server_env = {**relay.env, "GEMINI_MCP_BACKEND": "api", **env}  # the relay answers from the fake Gemini API
    config = relay.base / "claude-mcp.json"
    entry = {"command": sys.executable, "args": ["-m", "gemini_relay"], "env": server_env}
    config.write_text(json.dumps({"mcpServers": {SERVER: entry}}), encoding="utf-8")
    home = relay.base / "claude-home"
    home.mkdir(exist_ok=True)
    with fake_messages_api(name, arguments) as fake:
        done = subprocess.run(
            [str(binary), "-p", "Call the tool.", "--mcp-config", str(config), "--strict-mcp-config"]
            + ["--allowedTools", name, "--output-format", "stream-json", "--verbose", "--model", MODEL],
            capture_output=True,
            text=True,
            timeout=CLAUDE_TIMEOUT,
            cwd=relay.project,
            env=_claude_env(relay, home, fake),
            stdin=subprocess.DEVNULL,
            check=False,
        )
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
        return fake.result_text()


def _claude_env(relay: Relay, home: Path, fake: FakeMessagesApi) -> dict[str, str]:
    return {
        "HOME": str(home),
        "PATH": relay.env["PATH"],
        "LANG": "C.UTF-8",
        "ANTHROPIC_BASE_URL": fake.base_url,
        "ANTHROPIC_API_KEY": "sk-ant-fake",
        "ENABLE_TOOL_SEARCH": "false",  # else MCP tools wait behind a ToolSearch tool and never reach `tools`
        "DISABLE_TELEMETRY": "1",
        "DISABLE_AUTOUPDATER": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    }


def test_a_json_answer_reaches_the_model_with_its_conversation_id_and_notices(relay: Relay) -> None:
    arguments = {"prompt": "who?", "jsonSchema": PERSON, "maxResponseLength": 5}
    given = model_is_given(relay, "gemini-ask", arguments)
    data = json.loads(given)  # what Claude Code passed on: the structuredContent, as JSON
    assert list(data)[0] == "text"
    assert data["text"].startswith("⚠️ maxResponseLength does not apply to a jsonSchema answer; it was ignored.")
    assert "Gemini response:\n{" in data["text"] and data["value"]["name"]
    assert data["conversationId"]  # the model can continue the thread


def test_the_model_list_reaches_the_model_as_its_readable_listing(relay: Relay) -> None:
    given = model_is_given(relay, "gemini-models", {})
    assert given.startswith('{"text":"Models for the api backend')  # the listing comes first, not a dump of lines
    listing = json.loads(given)["text"]
    assert "\n- gemini-2.5-pro" in listing and "\nDefault: " in listing
