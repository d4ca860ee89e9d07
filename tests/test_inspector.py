"""Smoke run of the official MCP Inspector CLI (2.12.0) against the server: strict tools/list and tool calls, over
stdio and over Streamable HTTP with a bearer token."""

from __future__ import annotations

import json
import subprocess
import sys

from gemini_relay.tools.registry import registry
from tests.fakes.fake_gemini_api import ECHO_PREFIX
from tests.harness import Relay
from tests.real_clients import INSPECTOR, installed_version, require
from tests.transports.http_server import http_server

DEFAULT_TOOLS = registry(test_tools=False)  # the default tools, in registry order

INSPECTOR_TIMEOUT = 120.0


def inspect(relay: Relay, *args: str) -> tuple[int, list[dict[str, object]]]:
    env_args: list[str] = []
    for key, value in relay.env.items():
        env_args += ["-e", f"{key}={value}"]
    return run_inspector(relay, [*env_args, sys.executable, "-m", "gemini_relay", *args])


def run_inspector(relay: Relay, args: list[str]) -> tuple[int, list[dict[str, object]]]:
    inspector = require(INSPECTOR, "MCP Inspector 2.12.0")
    home = relay.base / "inspector-home"  # Inspector 2.x writes ~/.mcp-inspector
    home.mkdir(exist_ok=True)
    proc = subprocess.run(
        [str(inspector), "--cli", *args, "--format", "json", "-q"],
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
    assert [t["name"] for t in tools] == [t.name for t in DEFAULT_TOOLS]


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


def test_inspector_over_http_with_the_token_lists_the_tools_and_calls_ping(relay: Relay) -> None:
    with http_server(relay, token="insp-token") as server:
        header = ["--header", "Authorization: Bearer insp-token"]
        listed_code, listed = run_inspector(relay, [server.url, *header, "--method", "tools/list", "--strict"])
        call = ["--method", "tools/call", "--tool-name", "gemini-ping", "--tool-arg", "prompt=over http"]
        called_code, called = run_inspector(relay, [server.url, *header, *call])
        modern_code, modern = run_inspector(relay, [server.url, *header, "--protocol-era", "modern", *call])
    assert listed_code == 0, listed
    assert [t["name"] for t in listed[0]["result"]["tools"]] == [t.name for t in DEFAULT_TOOLS]  # type: ignore[index]
    assert called_code == 0 and called[0] == {
        "result": {"content": [{"type": "text", "text": "over http"}], "isError": False}
    }
    assert modern_code == 0, modern
    assert modern[0]["result"]["content"] == [{"type": "text", "text": "over http"}]  # type: ignore[index]


def test_inspector_binary_is_the_pinned_version() -> None:
    assert installed_version("@modelcontextprotocol/inspector") == "2.12.0"
