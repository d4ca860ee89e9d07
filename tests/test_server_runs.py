"""Failures, timeouts, cancellation and hygiene of real Gemini CLI runs driven through the server."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import anyio
import mcp_types as types
import pytest

from tests.fakes.gemini_home import CLI_SETTINGS
from tests.harness import Relay, cli_processes, gemini_binary, wait_no_cli_processes, write_wrapper
from tests.test_server_surface import text_of

pytestmark = pytest.mark.anyio


async def ask_error(relay: Relay, prompt: str, **env: str | None) -> str:
    async with relay.client(**env) as client:
        result = await client.call_tool("gemini-ask", {"prompt": prompt})
    assert result.is_error, text_of(result)
    return text_of(result)


@pytest.mark.parametrize(
    ("scenario", "expected"),
    [
        ("quota", "Gemini API quota or rate limit exhausted (HTTP 429): You exceeded your current quota"),
        ("quota_daily", "Gemini API quota or rate limit exhausted (HTTP 429): You have exhausted your daily quota"),
        ("error:500", "The Gemini API had an internal error (HTTP 500)"),
        ("error:503", "The Gemini API is overloaded or unavailable (HTTP 503): The model is overloaded."),
        ("error:400", "The Gemini API rejected the request (HTTP 400)"),
        ("error:403", "The Gemini API refused the credentials (HTTP 403)"),
        ("error:404", "Model not found: models/gemini-2.5-pro is not found"),
        ("nonjson", "Incomplete JSON segment at the end"),
        ("empty", "Gemini returned no usable answer: The model returned an empty response"),
        ("safety", "Gemini returned no usable answer: The model response was blocked"),
    ],
)
async def test_each_api_failure_reaches_the_caller_classified(relay: Relay, scenario: str, expected: str) -> None:
    text = await ask_error(relay, f"[[fake:{scenario}]]")
    assert text.startswith("Error executing gemini-ask: ")
    assert expected in text
    assert "[API Error:" not in text


async def test_missing_credentials_exit_41_with_the_fix(relay: Relay) -> None:
    text = await ask_error(relay, "hi", GEMINI_API_KEY=None)
    assert "Gemini CLI authentication failed" in text and "GEMINI_API_KEY" in text


async def test_an_untrusted_folder_exit_55_names_the_fix(relay: Relay) -> None:
    settings = json.loads(json.dumps(CLI_SETTINGS))
    del settings["security"]["folderTrust"]
    (relay.home / ".gemini" / "settings.json").write_text(json.dumps(settings), encoding="utf-8")
    text = await ask_error(relay, "hi")
    assert f"does not trust the folder {relay.project}" in text
    assert "GEMINI_CLI_TRUST_WORKSPACE=true" in text


async def test_the_session_turn_limit_exit_53_is_explained(relay: Relay) -> None:
    settings = {**CLI_SETTINGS, "model": {"maxSessionTurns": 1}}
    (relay.home / ".gemini" / "settings.json").write_text(json.dumps(settings), encoding="utf-8")
    (relay.project / "hello.txt").write_text("hi", encoding="utf-8")
    text = await ask_error(relay, "[[fake:tool_call]] read hello.txt")
    assert "maximum session turns" in text


async def test_gemini_cancel_stops_every_run_and_each_call_says_so(relay: Relay) -> None:
    results: list[types.CallToolResult] = []
    async with relay.client() as client:
        idle = await client.call_tool("gemini-cancel", {})
        async with anyio.create_task_group() as tg:

            async def stalled() -> None:
                results.append(await client.call_tool("gemini-ask", {"prompt": "[[fake:stall]]"}))

            tg.start_soon(stalled)
            tg.start_soon(stalled)
            await anyio.to_thread.run_sync(relay.api.wait_for_requests, 2)
            cancelled = await client.call_tool("gemini-cancel", {})
        await wait_no_cli_processes(relay.home)
    assert text_of(idle) == "Nothing was running."
    assert text_of(cancelled) == "Cancelled 2 run(s)."
    assert len(results) == 2
    for result in results:
        assert result.is_error
        assert text_of(result).startswith("Error executing gemini-ask: gemini-ask was cancelled by gemini-cancel")


async def test_an_mcp_cancel_stops_the_run_and_the_server_keeps_serving(relay: Relay) -> None:
    async with relay.client() as client:
        async with anyio.create_task_group() as tg:

            async def stalled() -> None:
                await client.call_tool("gemini-ask", {"prompt": "[[fake:stall]]"})

            tg.start_soon(stalled)
            await anyio.to_thread.run_sync(relay.api.wait_for_requests, 1)
            assert cli_processes(relay.home)
            tg.cancel_scope.cancel()  # the client sends notifications/cancelled
        await wait_no_cli_processes(relay.home)
        pong = await client.call_tool("gemini-ping", {})
    assert text_of(pong) == "Pong!"


async def test_closing_the_client_stops_runs_in_flight(relay: Relay) -> None:
    async with relay.client() as client, anyio.create_task_group() as tg:

        async def stalled() -> None:
            await client.call_tool("gemini-ask", {"prompt": "[[fake:stall]]"})

        tg.start_soon(stalled)
        await anyio.to_thread.run_sync(relay.api.wait_for_requests, 1)
        tg.cancel_scope.cancel()
    # The relay fixture's teardown fails the test if the server or the CLI is still alive.


async def test_no_prompt_or_file_bytes_reach_the_server_log(relay: Relay) -> None:
    (relay.project / "secret.md").write_text("credit card 4111-1111-1111-1111\n", encoding="utf-8")
    async with relay.client() as client:
        ok = await client.call_tool("gemini-ask", {"prompt": "zebra-crossing-7731 about @secret.md"})
        failed = await client.call_tool("gemini-ask", {"prompt": "[[fake:error:500]] zebra-crossing-7731"})
    assert not ok.is_error and failed.is_error
    log = relay.logs()
    assert "Tool gemini-ask(prompt=<" in log and "Spawning: gemini" in log
    assert "zebra-crossing-7731" not in log
    assert "4111-1111" not in log


async def test_the_child_env_is_an_allowlist(relay: Relay, tmp_path: Path) -> None:
    dump = tmp_path / "child-env.txt"
    wrapper = write_wrapper(tmp_path / "gemini", gemini_binary(), dump)
    async with relay.client(GEMINI_CLI_PATH=str(wrapper), FAKE_SECRET_TOKEN="tok-9f8e7d") as client:
        result = await client.call_tool("gemini-ask", {"prompt": "hi"})
    assert not result.is_error
    child = dict(line.split("=", 1) for line in dump.read_text(encoding="utf-8").splitlines() if "=" in line)
    assert "FAKE_SECRET_TOKEN" not in child
    assert "tok-9f8e7d" not in dump.read_text(encoding="utf-8")
    assert child["GEMINI_API_KEY"] == "dummy"
    assert child["NO_COLOR"] == "1"
    assert not any(key.startswith("GEMINI_RELAY_") for key in child)


async def test_a_stale_projects_lock_does_not_stall_the_next_run(relay: Relay) -> None:
    lock = relay.home / ".gemini" / "projects.json.lock"
    lock.mkdir(parents=True)
    os.utime(lock, (1_000_000_000, 1_000_000_000))
    async with relay.client() as client:
        result = await client.call_tool("gemini-ask", {"prompt": "hi"})
    assert not result.is_error
    # A kept lock would cost the CLI a 10 s stale wait; the relay removes it before spawning.
    assert "Removed a stale Gemini CLI projects.json.lock" in relay.logs()


async def test_an_unreachable_api_is_reported_as_a_network_error(relay: Relay) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        closed = sock.getsockname()[1]
    text = await ask_error(relay, "hi", GOOGLE_GEMINI_BASE_URL=f"http://127.0.0.1:{closed}")
    assert "Network error talking to the Gemini API" in text
    assert "fetch failed" in text
