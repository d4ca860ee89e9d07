"""Smoke run of the official MCP Inspector CLI (2.12.0) against the server: strict tools/list and tool calls."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gemini_relay.tools.names import DEFAULT_TOOLS
from tests.fakes.fake_gemini_api import ECHO_PREFIX
from tests.harness import REPO, Relay

INSPECTOR = REPO / ".tools" / "node_modules" / ".bin" / "mcp-inspector"
INSPECTOR_TIMEOUT = 120.0


def inspect(relay: Relay, *args: str) -> tuple[int, list[dict[str, object]]]:
    if not INSPECTOR.exists():
        pytest.fail(f"MCP Inspector is not installed at {INSPECTOR}; run scripts/test (it installs it)")
    env_args: list[str] = []
    for key, value in relay.env.items():
        env_args += ["-e", f"{key}={value}"]
    home = relay.base / "inspector-home"  # Inspector 2.x writes ~/.mcp-inspector
    home.mkdir(exist_ok=True)
    proc = subprocess.run(
        [str(INSPECTOR), "--cli", *env_args, sys.executable, "-m", "gemini_relay", *args, "--format", "json", "-q"],
        capture_output=True,
        text=True,
        timeout=INSPECTOR_TIMEOUT,
        cwd=relay.project,
        env={"PATH": relay.env["PATH"], "HOME": str(home)},
        stdin=subprocess.DEVNULL,
        check=False,
    )
    # Results go to stdout; Inspector's own verdicts (tool_is_error …) to stderr.
    output = proc.stdout.splitlines() + proc.stderr.splitlines()
    lines = [json.loads(line) for line in output if line.strip().startswith("{")]
    return proc.returncode, lines


def test_inspector_lists_the_eleven_tools_in_order_with_strict_checks_clean(relay: Relay) -> None:
    code, out = inspect(relay, "--method", "tools/list", "--strict")
    assert code == 0, out
    tools = out[0]["result"]["tools"]  # type: ignore[index]
    assert [t["name"] for t in tools] == [t.value for t in DEFAULT_TOOLS]


def test_inspector_calls_ping_and_ask_through_the_real_cli(relay: Relay) -> None:
    code, out = inspect(relay, "--method", "tools/call", "--tool-name", "gemini-ping", "--tool-arg", "prompt=hello")
    assert code == 0
    assert out[0] == {"result": {"content": [{"type": "text", "text": "hello"}], "isError": False}}
    code, out = inspect(relay, "--method", "tools/call", "--tool-name", "gemini-ask", "--tool-arg", "prompt=inspect me")
    assert code == 0, out
    text = out[0]["result"]["content"][0]["text"]  # type: ignore[index]
    assert text.startswith(f"Gemini response:\n{ECHO_PREFIX}inspect me\n\n🧵 conversationId: ")


def test_inspector_reports_an_error_result_with_exit_code_5(relay: Relay) -> None:
    code, out = inspect(relay, "--method", "tools/call", "--tool-name", "gemini-ask")
    assert code == 5
    assert out[-1]["error"] == {"code": "tool_is_error", "message": "Tool 'gemini-ask' returned isError:true."}


def test_inspector_binary_is_the_pinned_version() -> None:
    manifest = REPO / ".tools" / "node_modules" / "@modelcontextprotocol" / "inspector" / "package.json"
    assert json.loads(Path(manifest).read_text(encoding="utf-8"))["version"] == "2.12.0"
