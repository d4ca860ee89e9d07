"""What a process started by the `gemini-relay` command has loaded once it has served: a stdio server after its first
tools/call, a relay host after its first request. The suite and every client start hundreds of them; a module one
does not use is CPU spent at every start (bench/start_cpu.py measures it)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from gemini_relay import __version__
from gemini_relay.jobs.protocol import PROTOCOL, socket_address, socket_path

BOUND = 60.0  # seconds: a loaded machine; a reply that never comes fails the test
# The real entry point, as `python -m gemini_relay` runs it, with what it has loaded and frozen written at exit.
ENTRY = """
import atexit, gc, json, runpy, sys
path = sys.argv[1]
def dump():
    with open(path, "w") as out:
        json.dump({"modules": sorted(sys.modules), "frozen": gc.get_freeze_count()}, out)
atexit.register(dump)
sys.argv = ["gemini-relay", *sys.argv[2:]]
runpy.run_module("gemini_relay", run_name="__main__")
"""
# Never on a server's path unless a call uses them: the SDK's client and high-level server (with its HTTP client),
# the request-state crypto of the conformance fixtures, the Gemini SDK, schema validation, test-only libraries.
INITIALIZE = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}
NEVER_IN_A_SERVER = ("mcp.client", "mcp.server.mcpserver", "httpx2", "cryptography", "google.genai", "jsonschema",
                     "hypothesis")  # fmt: skip
OPT_IN_TOOLSETS = ("gemini_relay.tools.jobs.toolset", "gemini_relay.tools.review", "gemini_relay.tools.media")


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    project = tmp_path / "project"
    project.mkdir(exist_ok=True)
    return {
        "PATH": os.environ.get("PATH", os.defpath),
        "LANG": "C.UTF-8",
        "HOME": str(tmp_path),
        "GEMINI_RELAY_PROJECT_ROOT": str(project),
        "GEMINI_RELAY_STATE_DIR": str(tmp_path / "state"),
        "GEMINI_MCP_BACKEND": "api",
        "GEMINI_API_KEY": "test-key",  # nothing is called: the backend must only be configured
        "GEMINI_RELAY_HOST": "off",
        **extra,
    }


def _served_stdio(tmp_path: Path, env: dict[str, str]) -> dict[str, Any]:
    """Start a stdio server, have it answer initialize, tools/list and gemini-ping, close stdin; what it loaded."""
    dump = tmp_path / "loaded.json"
    messages: list[dict[str, Any]] = [
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": INITIALIZE},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "gemini-ping", "arguments": {}}},
    ]  # fmt: skip
    argv = [sys.executable, "-c", ENTRY, str(dump)]
    cwd = env["GEMINI_RELAY_PROJECT_ROOT"]
    with subprocess.Popen(
        argv, env=env, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    ) as server:
        assert server.stdin is not None and server.stdout is not None
        server.stdin.write(b"".join(json.dumps(m).encode() + b"\n" for m in messages))
        server.stdin.flush()
        replies = [json.loads(server.stdout.readline() or b"null") for _ in range(3)]  # then EOF: it exits
        server.stdin.close()
        assert server.wait(BOUND) == 0
    assert [r["id"] for r in replies] == [0, 1, 2]
    assert replies[2]["result"]["content"][0]["text"] == "Pong!"
    loaded: dict[str, Any] = json.loads(dump.read_text(encoding="utf-8"))
    return loaded


def _loaded_any(modules: list[str], names: tuple[str, ...]) -> list[str]:
    return [m for m in modules if any(m == name or m.startswith(name + ".") for name in names)]


@pytest.mark.parametrize("front", ["front", "sdk"])
def test_a_stdio_server_that_answered_a_call_never_loaded_the_mcp_client_nor_what_no_call_used(
    tmp_path: Path, front: str
) -> None:
    # "sdk": a tools/limit the shipped answers do not cover, so the SDK answers initialize and tools/list too.
    env = _env(tmp_path) if front == "front" else _env(tmp_path, GEMINI_MCP_TIMEOUT="7")
    modules = _served_stdio(tmp_path, env)["modules"]
    assert "mcp.server.lowlevel" in modules  # it did serve through the SDK
    assert _loaded_any(modules, NEVER_IN_A_SERVER) == []


def test_a_stdio_server_loads_the_tools_of_the_toolsets_it_serves_only(tmp_path: Path) -> None:
    served = _served_stdio(tmp_path, _env(tmp_path))["modules"]
    assert _loaded_any(served, OPT_IN_TOOLSETS) == []
    with_review = _served_stdio(tmp_path, _env(tmp_path, GEMINI_RELAY_TOOLSETS="review"))["modules"]
    assert "gemini_relay.tools.review.toolset" in with_review
    assert _loaded_any(with_review, ("gemini_relay.tools.jobs.toolset", "gemini_relay.tools.media")) == []


def test_a_servers_long_lived_objects_are_kept_out_of_the_garbage_collectors_walks(tmp_path: Path) -> None:
    # The imports' objects (the SDK's models) frozen: no collection walks them again, nor the one at exit.
    assert _served_stdio(tmp_path, _env(tmp_path))["frozen"] > 100_000


def test_a_relay_host_that_answered_a_request_loaded_no_mcp_and_froze_its_imports(tmp_path: Path) -> None:
    env = _env(tmp_path, GEMINI_RELAY_HOST="on")
    state = Path(env["GEMINI_RELAY_STATE_DIR"])
    dump = tmp_path / "loaded.json"
    argv = [sys.executable, "-c", ENTRY, str(dump), "host"]
    with subprocess.Popen(
        argv, env=env, cwd=tmp_path, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    ) as host:
        assert host.stderr is not None
        for line in host.stderr:  # its log says when it listens (or it exits, and this ends)
            if b"listening on" in line:
                break
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(BOUND)
            with socket_address(socket_path(state)) as address:
                sock.connect(address)
            lines = [
                {"op": "hello", "protocol": PROTOCOL, "version": __version__},
                {"op": "status"},
                {"op": "shutdown"},
            ]
            sock.sendall("".join(json.dumps(m) + "\n" for m in lines).encode())
            with sock.makefile("rb") as replies:
                answers = [json.loads(replies.readline()) for _ in lines]
        assert answers[0]["ok"] and answers[2]["stopping"]
        assert host.wait(BOUND) == 0
    loaded = json.loads(dump.read_text(encoding="utf-8"))
    assert _loaded_any(loaded["modules"], ("mcp", "mcp_types", "pydantic", *NEVER_IN_A_SERVER)) == []
    assert loaded["frozen"] > 10_000


def test_setup_remove_checks_the_http_address_without_loading_the_web_stack(tmp_path: Path) -> None:
    # setup runs in the user's shell, once per client edit: the door (starlette, the SDK's transport) is the server's.
    env = _env(tmp_path)
    dump = tmp_path / "loaded.json"
    argv = [sys.executable, "-c", ENTRY, str(dump), "setup", "--remove", "--yes"]
    done = subprocess.run(argv, env=env, cwd=tmp_path, capture_output=True, timeout=BOUND, check=False)
    assert done.returncode == 0, done.stderr.decode()
    loaded = json.loads(dump.read_text(encoding="utf-8"))["modules"]
    assert "gemini_relay.transports.address" in loaded  # it did check the address
    assert _loaded_any(loaded, ("starlette", "mcp", "gemini_relay.transports.guard")) == []
