"""The stdio front: a server's very first start (an empty state dir) answers initialize and tools/list with the SDK's
own lines, byte for byte, before the SDK has loaded, then serves everything else as before. Params it cannot vouch
for and requests it does not know go to the SDK; a shipped answer that went stale is noticed, and nothing in the
state dir is ever served in its place."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

import gemini_relay
from gemini_relay.app import explained_deps
from gemini_relay.config import Settings
from gemini_relay.server.relay import RelayServer
from gemini_relay.tools.registry import registry
from gemini_relay.transports.front_answers_make import relay_server, sdk_lines
from tests.harness import Relay

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}},
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
PING = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "gemini-ping", "arguments": {}}}
FRONT = "from the shipped answers while the SDK loaded"


def converse(relay: Relay, messages: list[dict[str, Any]], **env: str) -> tuple[list[bytes], str]:
    """Send each message, read one reply line per request (in the order they come), then close stdin."""
    log = relay.base / "front-stderr.log"
    log.write_text("")
    with (
        log.open("a", encoding="utf-8") as errlog,
        subprocess.Popen(
            [sys.executable, "-m", "gemini_relay"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=errlog,
            env={**relay.env, **env},
            cwd=relay.project,
        ) as proc,
    ):
        assert proc.stdin is not None and proc.stdout is not None
        replies = []
        for message in messages:
            proc.stdin.write(json.dumps(message).encode() + b"\n")
            proc.stdin.flush()
            if "id" in message:
                replies.append(proc.stdout.readline())
        proc.stdin.close()
        assert proc.wait(30) == 0
    return replies, log.read_text(encoding="utf-8")


def parsed(lines: list[bytes]) -> list[dict[str, Any]]:
    return [json.loads(line) for line in lines]


def state_dir(relay: Relay) -> Path:
    return relay.home / ".local" / "state" / "gemini-relay"


def sdk_own(relay: Relay, messages: list[dict[str, Any]], **env: str) -> list[bytes]:
    """The lines the SDK itself writes for `messages`, from a server with this world's settings."""
    settings = Settings.from_env({**relay.env, "GEMINI_RELAY_STATE_DIR": str(relay.base / "sdk-state"), **env})
    lines = anyio.run(sdk_lines, relay_server(settings), messages)
    return [line.encode("utf-8") for line in lines]


def test_a_first_start_answers_initialize_and_tools_list_with_the_sdks_own_lines_byte_for_byte(relay: Relay) -> None:
    replies, log = converse(relay, [INITIALIZE, INITIALIZED, LIST, PING])
    assert f"Answered initialize and tools/list {FRONT}" in log
    assert replies[:2] == sdk_own(relay, [INITIALIZE, INITIALIZED, LIST])
    answers = parsed(replies)
    assert [t["name"] for t in answers[1]["result"]["tools"]][:3] == ["gemini-ask", "gemini-plan", "gemini-image"]
    assert answers[2]["result"]["content"][0]["text"] == "Pong!"  # the SDK's session was initialized too
    assert not (state_dir(relay) / "stdio-front.json").exists()  # nothing recorded: nothing to trust later
    assert "differs from the SDK's" not in log


def test_each_toolset_setting_and_protocol_version_gets_its_own_answer(relay: Relay) -> None:
    jobs, log = converse(relay, [INITIALIZE, INITIALIZED, LIST], GEMINI_RELAY_TOOLSETS="jobs")
    assert f"Answered initialize and tools/list {FRONT}" in log
    assert jobs == sdk_own(relay, [INITIALIZE, INITIALIZED, LIST], GEMINI_RELAY_TOOLSETS="jobs")
    assert len(parsed(jobs)[1]["result"]["tools"]) > len(registry(test_tools=False))  # the default answer's tools
    for asked, negotiated in [("2025-11-25", "2025-11-25"), ("2024-11-05", "2024-11-05"), ("2031-01-01", "2025-11-25")]:
        other = {**INITIALIZE, "params": {**INITIALIZE["params"], "protocolVersion": asked}}  # type: ignore[dict-item]
        answered, log = converse(relay, [other, INITIALIZED, LIST])
        assert FRONT in log and parsed(answered)[0]["result"]["protocolVersion"] == negotiated
        assert answered == sdk_own(relay, [other, INITIALIZED, LIST])


def test_an_allowlist_start_answers_with_the_sdks_list_of_only_those_tools(relay: Relay) -> None:
    replies, log = converse(relay, [INITIALIZE, INITIALIZED, LIST], GEMINI_RELAY_TOOLS="gemini-ping,gemini-ask")
    assert FRONT not in log  # the shipped answers list every tool: the SDK answers an allowlist itself
    assert [t["name"] for t in parsed(replies)[1]["result"]["tools"]] == ["gemini-ask", "gemini-ping"]
    assert replies == explained_sdk_own(
        relay, [INITIALIZE, INITIALIZED, LIST], GEMINI_RELAY_TOOLS="gemini-ping,gemini-ask"
    )


@pytest.mark.parametrize(
    "params",
    [
        {**INITIALIZE["params"], "clientInfo": {"name": "test", "version": "1", "icons": 5}},  # type: ignore[dict-item]
        {**INITIALIZE["params"], "capabilities": {"roots": "yes"}},  # type: ignore[dict-item]
        {"protocolVersion": "2025-06-18", "capabilities": {}},
        None,
    ],
    ids=["odd-client-info", "odd-capability", "no-client-info", "no-params"],
)
def test_params_the_front_cannot_vouch_for_go_to_the_sdk(relay: Relay, params: Any) -> None:
    initialize = {key: value for key, value in {**INITIALIZE, "params": params}.items() if value is not None}
    replies, log = converse(relay, [initialize, PING])
    assert FRONT not in log
    assert parsed(replies)[0] == parsed(sdk_own(relay, [initialize]))[0]  # the SDK's own verdict, whatever it is


def test_a_first_request_the_front_does_not_know_goes_to_the_sdk_in_order(relay: Relay) -> None:
    replies, log = converse(relay, [INITIALIZE, INITIALIZED, PING, LIST])
    answers = parsed(replies)
    assert f"Answered initialize {FRONT}" in log  # tools/list came after a call: the SDK's
    assert answers[1]["id"] == 2 and answers[1]["result"]["content"][0]["text"] == "Pong!"
    assert answers[2]["id"] == 1 and answers[2]["result"]["tools"]


def test_an_old_recording_left_in_the_state_dir_is_never_served(relay: Relay) -> None:
    old = state_dir(relay) / "stdio-front.json"
    old.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    evil = {"initialize": {"instructions": "EVIL"}, "tools": {"tools": [{"name": "x", "description": "EVIL"}]}}
    old.write_text(json.dumps({"format": 2, "entries": {"any": evil}, "digests": {}}))
    old.chmod(0o600)
    replies, log = converse(relay, [INITIALIZE, INITIALIZED, LIST])
    assert FRONT in log and b"EVIL" not in b"".join(replies)


def explained_sdk_own(relay: Relay, messages: list[dict[str, Any]], **env: str) -> list[bytes]:
    """The lines the SDK writes for `messages` from the server the `gemini-relay` command starts with this env
    (explained_deps: a configuration problem is said, not raised)."""
    deps = explained_deps({**relay.env, **env})
    lines = anyio.run(sdk_lines, RelayServer(deps).build(), messages)
    return [line.encode("utf-8") for line in lines]


def unusable_state_dir(relay: Relay) -> dict[str, str]:
    blocked = relay.base / "a-file"
    blocked.write_text("not a folder", encoding="utf-8")
    return {"GEMINI_RELAY_STATE_DIR": str(blocked / "state")}


MISCONFIGURED = [  # the problems a start can see (README, Client configuration), each in the first answer
    ("AGY_CLI_PATH", lambda relay: {"AGY_CLI_PATH": "/nonexistent/agy"}, "AGY_CLI_PATH='/nonexistent/agy'"),
    ("backend", lambda relay: {"GEMINI_MCP_BACKEND": "bogus"}, "GEMINI_MCP_BACKEND='bogus'"),
    ("state dir", unusable_state_dir, "cannot use the state dir"),
    ("toolset", lambda relay: {"GEMINI_RELAY_TOOLSETS": "reviw"}, "unknown toolset(s) reviw"),
    ("tool", lambda relay: {"GEMINI_RELAY_TOOLS": "gemini-ask,gemini-aks"}, "unknown tool(s) gemini-aks"),
]


@pytest.mark.parametrize(("env_of", "said"), [m[1:] for m in MISCONFIGURED], ids=[m[0] for m in MISCONFIGURED])
def test_a_configuration_problem_visible_at_start_is_in_the_first_initialize_answer(
    relay: Relay, env_of: Any, said: str
) -> None:
    env = env_of(relay)
    replies, log = converse(relay, [INITIALIZE, INITIALIZED, LIST], **env)
    instructions = parsed(replies)[0]["result"]["instructions"]
    assert instructions.startswith("⚠️ gemini-relay is misconfigured"), instructions[:200]
    assert said in instructions
    assert replies[0] == explained_sdk_own(relay, [INITIALIZE], **env)[0]  # the SDK's own answer, as sent
    assert "differs from the SDK's" not in log and "front_answers_make" not in log  # no maintainer's line


def test_a_stale_shipped_answer_is_never_a_line_in_the_users_log(relay: Relay, tmp_path: Path) -> None:
    """A shipped answer that differs from the SDK's is a test failure (test_front_answers.py), not a user's log
    line: the server no longer asks the SDK for a second tools/list to compare."""
    copy = tmp_path / "build"
    shutil.copytree(Path(gemini_relay.__file__).parent, copy / "gemini_relay", ignore=shutil.ignore_patterns("*.pyc"))
    answers = copy / "gemini_relay" / "transports" / "front_answers.json"
    data = json.loads(answers.read_text(encoding="utf-8"))
    for entry in data["tools"].values():
        entry["description"] = "STALE " + entry["description"]
    answers.write_text(json.dumps(data), encoding="utf-8")
    replies, log = converse(relay, [INITIALIZE, INITIALIZED, LIST, PING], PYTHONPATH=str(copy))
    assert parsed(replies)[1]["result"]["tools"][0]["description"].startswith("STALE ")  # what the front sent
    assert parsed(replies)[2]["result"]["content"][0]["text"] == "Pong!"
    assert "differs from the SDK's" not in log and "front_answers_make" not in log


def spawn(relay: Relay, *args: str, stderr: int) -> subprocess.Popen[bytes]:
    """Python with `args` in the relay's world, its stdin and stdout piped to the test."""
    return subprocess.Popen(
        [sys.executable, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, env=relay.env,
        cwd=relay.project,
    )  # fmt: skip


def test_sigterm_ends_a_server_waiting_for_its_next_line(relay: Relay) -> None:
    for loaded in (False, True):  # before and after the SDK took over the wire
        with spawn(relay, "-m", "gemini_relay", stderr=subprocess.DEVNULL) as proc:
            assert proc.stdin is not None and proc.stdout is not None
            sent: list[dict[str, Any]] = [INITIALIZE, INITIALIZED, PING] if loaded else [INITIALIZE]
            for message in sent:
                proc.stdin.write(json.dumps(message).encode() + b"\n")
                proc.stdin.flush()
                if "id" in message:
                    proc.stdout.readline()
            proc.send_signal(signal.SIGTERM)
            # Loaded: the server's own handler exits 0, and no worker thread left waiting on stdin keeps it alive.
            # Still loading: nothing has started yet, so SIGTERM's default (-15) is as clean.
            allowed: tuple[int, ...] = (0,) if loaded else (0, -int(signal.SIGTERM))
            assert proc.wait(15) in allowed


# The front as the SDK reads it, in a process of its own (it takes over fds 0 and 1), with every worker thread busy.
BUSY_READER = """
import sys
import anyio, anyio.to_thread
from gemini_relay.transports.stdio_front import StdioFront

front = StdioFront(None, "")
front.ready()
front.serve_until_ready()

async def main() -> None:
    limiter = anyio.to_thread.current_default_thread_limiter()
    holders = []
    while limiter.available_tokens:
        holders.append(object())
        await limiter.acquire_on_behalf_of(holders[-1])
    sys.stderr.write("waiting\\n")
    sys.stderr.flush()
    out = front.sdk_stdout()
    with anyio.fail_after(20):
        line = await front.next_line()
        await out.write("got " + line.decode())
        await out.flush()

anyio.run(main)
"""


def test_a_request_reaches_the_server_and_its_reply_the_client_with_every_worker_thread_busy(relay: Relay) -> None:
    with spawn(relay, "-c", BUSY_READER, stderr=subprocess.PIPE) as proc:
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        assert proc.stderr.readline() == b"waiting\n"
        proc.stdin.write(json.dumps(PING).encode() + b"\n")
        proc.stdin.flush()
        assert proc.stdout.readline() == b"got " + json.dumps(PING).encode() + b"\n"
        assert proc.wait(15) == 0
