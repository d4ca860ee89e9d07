"""Failures, cancellation and hygiene of real Gemini CLI runs driven through the server: what only the real CLI
and the server's process show. Every failure class as the server presents it is proved in memory
(inmemory/test_failures.py); the CLI's own classification by tests/backends."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import anyio
import mcp_types as types
import pytest
from mcp import Client

from tests.fakes.gemini_home import CLI_SETTINGS
from tests.harness import (
    Relay,
    cli_processes,
    fresh_case,
    gemini_binary,
    module_event_loop,
    shared_server,
    wait_no_cli_processes,
    write_wrapper,
)
from tests.test_server_surface import text_of

pytestmark = pytest.mark.anyio

# Cases on the default world share one server; a case that changes the env, or closes its client mid-run, has its own.
anyio_backend = module_event_loop()
cold_world, cold_client = shared_server("cold")


async def ask_error(relay: Relay, prompt: str, **env: str | None) -> str:
    async with relay.client(**env) as client:
        result = await client.call_tool("gemini-ask", {"prompt": prompt})
    assert result.is_error, text_of(result)
    return text_of(result)


async def test_an_api_failure_reaches_the_caller_classified_and_no_prompt_or_file_bytes_reach_the_log(
    cold_world: Relay, cold_client: Client
) -> None:
    fresh_case(cold_world)
    # One class through the real CLI over stdio; every class as the server presents it: inmemory/test_failures.py.
    (cold_world.project / "secret.md").write_text("credit card 4111-1111-1111-1111\n", encoding="utf-8")
    ok = await cold_client.call_tool("gemini-ask", {"prompt": "zebra-crossing-7731 about @secret.md"})
    failed = await cold_client.call_tool("gemini-ask", {"prompt": "[[fake:error:500]] zebra-crossing-7731"})
    assert not ok.is_error and failed.is_error
    text = text_of(failed)
    assert text.startswith("Error executing gemini-ask: ")
    assert "The Gemini API had an internal error (HTTP 500)" in text
    assert "[API Error:" not in text
    log = cold_world.logs()
    assert "Tool gemini-ask(prompt=<" in log and "Spawning: gemini" in log
    assert "zebra-crossing-7731" not in log
    assert "4111-1111" not in log


async def test_the_clis_exit_codes_for_credentials_trust_and_the_turn_limit_each_name_the_fix(relay: Relay) -> None:
    missing_key = await ask_error(relay, "hi", GEMINI_API_KEY=None)  # exit 41
    untrusted = json.loads(json.dumps(CLI_SETTINGS))
    del untrusted["security"]["folderTrust"]
    settings = relay.home / ".gemini" / "settings.json"
    (relay.project / "hello.txt").write_text("hi", encoding="utf-8")
    async with relay.client() as client:  # each cold run reads the settings afresh
        settings.write_text(json.dumps(untrusted), encoding="utf-8")
        untrusted_folder = await client.call_tool("gemini-ask", {"prompt": "hi"})  # exit 55
        settings.write_text(json.dumps({**CLI_SETTINGS, "model": {"maxSessionTurns": 1}}), encoding="utf-8")
        turn_limit = await client.call_tool("gemini-ask", {"prompt": "[[fake:tool_call]] read hello.txt"})  # 53
    assert "Gemini CLI authentication failed" in missing_key and "GEMINI_API_KEY" in missing_key
    assert untrusted_folder.is_error and turn_limit.is_error
    assert f"does not trust the folder {relay.project}" in text_of(untrusted_folder)
    assert "GEMINI_CLI_TRUST_WORKSPACE=true" in text_of(untrusted_folder)
    assert "maximum session turns" in text_of(turn_limit)


async def test_gemini_cancel_stops_every_run_and_each_call_says_so(cold_world: Relay, cold_client: Client) -> None:
    fresh_case(cold_world)
    results: list[types.CallToolResult] = []
    idle = await cold_client.call_tool("gemini-cancel", {})
    async with anyio.create_task_group() as tg:

        async def stalled() -> None:
            results.append(await cold_client.call_tool("gemini-ask", {"prompt": "[[fake:stall]]"}))

        tg.start_soon(stalled)
        tg.start_soon(stalled)
        await anyio.to_thread.run_sync(cold_world.api.wait_for_requests, 2)
        cancelled = await cold_client.call_tool("gemini-cancel", {})
    await wait_no_cli_processes(cold_world.home)
    assert text_of(idle) == "Nothing was running."
    assert text_of(cancelled) == "Cancelled 2 run(s)."
    assert len(results) == 2
    for result in results:
        assert result.is_error
        assert text_of(result).startswith("Error executing gemini-ask: gemini-ask was cancelled by gemini-cancel")


async def test_an_mcp_cancel_stops_the_run_the_server_keeps_serving_and_closing_the_client_stops_the_rest(
    relay: Relay,
) -> None:
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
        async with anyio.create_task_group() as tg:
            tg.start_soon(stalled)
            await anyio.to_thread.run_sync(relay.api.wait_for_requests, 2)
            tg.cancel_scope.cancel()
        # The client closes at once, the server's stdin with it, this run still in flight: the relay fixture's
        # teardown fails the test if the server or the CLI is still alive.


async def test_the_child_env_is_an_allowlist_a_stale_lock_is_cleared_and_an_unreachable_api_is_a_network_error(
    relay: Relay, tmp_path: Path
) -> None:
    dump = tmp_path / "child-env.txt"
    wrapper = write_wrapper(tmp_path / "gemini", gemini_binary(), dump)
    lock = relay.home / ".gemini" / "projects.json.lock"
    lock.mkdir(parents=True)
    os.utime(lock, (1_000_000_000, 1_000_000_000))
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        closed = sock.getsockname()[1]
    env = {"GEMINI_CLI_PATH": str(wrapper), "FAKE_SECRET_TOKEN": "tok-9f8e7d"}
    text = await ask_error(relay, "hi", GOOGLE_GEMINI_BASE_URL=f"http://127.0.0.1:{closed}", **env)
    assert "Network error talking to the Gemini API" in text
    assert "fetch failed" in text
    child = dict(line.split("=", 1) for line in dump.read_text(encoding="utf-8").splitlines() if "=" in line)
    assert "FAKE_SECRET_TOKEN" not in child
    assert "tok-9f8e7d" not in dump.read_text(encoding="utf-8")
    assert child["GEMINI_API_KEY"] == "dummy"
    assert child["NO_COLOR"] == "1"
    assert not any(key.startswith("GEMINI_RELAY_") for key in child)
    # A kept lock would cost the CLI a 10 s stale wait; the relay removes it before spawning.
    assert "Removed a stale Gemini CLI projects.json.lock" in relay.logs()
