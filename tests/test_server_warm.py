"""GEMINI_RELAY_WARM=on through the MCP client: runs served by one warm `gemini --acp`, answering like cold `-p`."""

from __future__ import annotations

import json
import os
import re
import signal
from pathlib import Path

import anyio
import pytest
from mcp import Client

from tests.fakes.fake_gemini_api import SLOW_CHUNKS
from tests.harness import (
    TEST_MODEL,
    Relay,
    cli_processes,
    fresh_case,
    module_event_loop,
    processes_using,
    shared_server,
    wait_no_cli_processes,
)
from tests.test_server_literal import HIDDEN, leaked, plant
from tests.test_server_surface import text_of

pytestmark = pytest.mark.anyio

# The RSS recycle has its own tests (tests/backends/gemini_cli/acp); here a loaded machine's late GC must not boot a
# second CLI under a test that counts them.
WARM = {"GEMINI_RELAY_WARM": "on", "GEMINI_RELAY_PROGRESS_INTERVAL": "0.1", "GEMINI_RELAY_WARM_MAX_RSS_MB": "4096"}
THREAD = re.compile(r"🧵 conversationId: ([A-Za-z0-9_-]+)")
CACHE_KEY = re.compile(r"(?<=[Cc]ache key: )\w+|(?<=cacheKey=\")\w+")
BOUND = 30.0
# Three cases that only need a warm server share one (and its warm CLI, which one of them kills: the next waits for
# the one serving); the cases that compare with cold, count CLIs across servers or change the env have their own.
anyio_backend = module_event_loop()
warm_world, warm_client = shared_server("warm", WARM)


def acp_processes(home: Path) -> list[int]:
    """The warm CLIs: each leads its own process group. A child the CLI forks (a tool's shell, git) shares its group
    and, until it execs, its `--acp` command line: counting those made the counts flaky on a loaded machine."""
    return [pid for pid in cli_processes(home) if b"--acp" in _cmdline(pid).split(b"\0") and _leads_group(pid)]


def _leads_group(pid: int) -> bool:
    try:
        return os.getpgid(pid) == pid
    except OSError:
        return False


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def thread_of(text: str) -> str:
    found = THREAD.search(text)
    assert found is not None, text
    return found.group(1)


RECEIPT = re.compile(r"\n\n— [^\n]+$")  # its own run: job id, time and warm or cold (compared on their own)


def without_thread(text: str) -> str:
    return RECEIPT.sub("", CACHE_KEY.sub("<key>", THREAD.sub("🧵 conversationId: <id>", text)))


async def wait_for_warm_process(home: Path) -> list[int]:
    # The same set twice in a row: a process caught mid-exec (the launcher becoming node) reads as gone for a moment.
    previous: list[int] = []
    with anyio.fail_after(BOUND):
        while True:
            now = acp_processes(home)
            if now and now == previous:
                return now
            previous = now
            await anyio.sleep(0.05)  # the prewarm boots in the background; /proc is all the test can watch


# The parity matrix (tests/backends/test_warm_cold_parity.py) proves warm == cold per upstream behaviour at the
# backend; through the server, a long answer and an error show the server path changes nothing either returns, and
# a slash command that the warm backend hands to the cold path (warm.py) answers as on a cold server.
SERVER_SCENARIOS = ("[[fake:big:40]]", "[[fake:error:500]]", "/help me")


async def test_a_warm_answer_equals_the_cold_answer_for_the_same_scenario(relay: Relay) -> None:
    async with relay.client(GEMINI_RELAY_WARM="off") as client:
        cold = [await client.call_tool("gemini-ask", {"prompt": prompt}) for prompt in SERVER_SCENARIOS]
        assert acp_processes(relay.home) == []  # warm off never starts an ACP process
    async with relay.client(**WARM) as client:
        pids = await wait_for_warm_process(relay.home)
        warm = [await client.call_tool("gemini-ask", {"prompt": prompt}) for prompt in SERVER_SCENARIOS]
        assert acp_processes(relay.home) == pids  # the prewarmed process served the warm ones; no second one
    assert [r.is_error for r in warm] == [r.is_error for r in cold] == [False, True, False]
    assert [without_thread(text_of(r)) for r in warm] == [without_thread(text_of(r)) for r in cold]


async def test_the_receipt_says_a_run_was_cold_or_warm_and_names_the_model_the_cli_served(relay: Relay) -> None:
    async with relay.client(GEMINI_RELAY_WARM="off") as client:
        cold = await client.call_tool("gemini-ask", {"prompt": "cold"})
    async with relay.client(**WARM) as client:
        await wait_for_warm_process(relay.home)
        await client.call_tool("gemini-ask", {"prompt": "the prewarmed process may still be booting"})
        warm = await client.call_tool("gemini-ask", {"prompt": "warm"})
    receipts = [(r.structured_content or {})["receipt"] for r in (cold, warm)]
    assert [r["warm"] for r in receipts] == [False, True]
    for result, receipt, how in zip((cold, warm), receipts, ("cold", "warm"), strict=True):
        assert receipt["backend"] == "gemini" and receipt["model"] == TEST_MODEL and receipt["requested_model"] is None
        assert receipt["tokens"]["total_tokens"] > 0 and receipt["first_byte_seconds"] is not None
        assert receipt["job_id"] and receipt["conversation_id"] == thread_of(text_of(result))
        tokens = receipt["tokens"]["total_tokens"]
        line = f" via gemini ({how}) · {receipt['total_seconds']:.1f} s · {tokens} tokens · job {receipt['job_id']}"
        assert text_of(result).endswith(line), text_of(result)


async def test_a_cold_conversation_continues_warm_and_a_warm_one_continues_cold(relay: Relay) -> None:
    async with relay.client(GEMINI_RELAY_WARM="off") as client:
        cold_id = thread_of(text_of(await client.call_tool("gemini-ask", {"prompt": "first, cold"})))
    async with relay.client(**WARM) as client:
        warm_turn = await client.call_tool("gemini-ask", {"prompt": "[[fake:history]]", "conversationId": cold_id})
        warm_id = thread_of(text_of(await client.call_tool("gemini-ask", {"prompt": "first, warm"})))
    async with relay.client(GEMINI_RELAY_WARM="off") as client:
        cold_turn = await client.call_tool("gemini-ask", {"prompt": "[[fake:history]]", "conversationId": warm_id})
    assert text_of(warm_turn).startswith("Gemini response:\nturns=2\n\n"), text_of(warm_turn)
    assert thread_of(text_of(warm_turn)) == cold_id
    assert text_of(cold_turn).startswith("Gemini response:\nturns=2\n\n"), text_of(cold_turn)


async def test_a_warm_turn_cancelled_by_gemini_cancel_or_by_the_client_leaves_the_process_serving(
    warm_world: Relay, warm_client: Client
) -> None:
    fresh_case(warm_world)
    results = []
    pids = await wait_for_warm_process(warm_world.home)
    async with anyio.create_task_group() as tg:

        async def stalled() -> None:
            results.append(await warm_client.call_tool("gemini-ask", {"prompt": "[[fake:stall]]"}))

        tg.start_soon(stalled)
        await anyio.to_thread.run_sync(warm_world.api.wait_for_requests, 1, BOUND)
        cancelled = await warm_client.call_tool("gemini-cancel", {})
    seen = len(warm_world.api.requests)
    async with anyio.create_task_group() as tg:

        async def stalled_again() -> None:
            await warm_client.call_tool("gemini-ask", {"prompt": "[[fake:stall]]"})

        tg.start_soon(stalled_again)
        await anyio.to_thread.run_sync(warm_world.api.wait_for_requests, seen + 1, BOUND)
        tg.cancel_scope.cancel()  # the client sends notifications/cancelled
    after = await warm_client.call_tool("gemini-ask", {"prompt": "hi"})
    assert acp_processes(warm_world.home) == pids
    assert text_of(cancelled) == "Cancelled 1 run(s)."
    assert text_of(results[0]).startswith("Error executing gemini-ask: gemini-ask was cancelled by gemini-cancel")
    assert "You said: hi" in text_of(after)


async def test_a_warm_cli_killed_mid_run_fails_with_the_partial_text_and_the_next_call_works(
    warm_world: Relay, warm_client: Client
) -> None:
    fresh_case(warm_world)
    killed: list[int] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        if not killed and message is not None and SLOW_CHUNKS[0].strip() in message:
            killed.extend(acp_processes(warm_world.home))
            for pid in killed:
                os.killpg(pid, signal.SIGKILL)

    await wait_for_warm_process(warm_world.home)
    failed = await warm_client.call_tool("gemini-ask", {"prompt": "[[fake:slow:2]]"}, progress_callback=on_progress)
    with anyio.fail_after(BOUND):
        while any(Path(f"/proc/{pid}").exists() for pid in killed):
            await anyio.sleep(0.05)  # polls /proc: no event announces a reaped process
    after = await warm_client.call_tool("gemini-ask", {"prompt": "hi"})
    assert killed
    assert failed.is_error
    text = text_of(failed)
    assert "killed by signal 9" in text
    assert SLOW_CHUNKS[0].strip() in text  # the partial answer is kept
    assert "You said: hi" in text_of(after)


async def test_without_acp_the_calls_run_cold_with_one_notice(relay: Relay, tmp_path: Path) -> None:
    # A `gemini` that answers -p like the real one but fails the ACP handshake (exits at once on --acp).
    wrapper = tmp_path / "gemini-no-acp"
    wrapper.write_text(
        f'#!/bin/sh\nfor a in "$@"; do [ "$a" = --acp ] && exit 1; done\nexec "{relay.env["GEMINI_CLI_PATH"]}" "$@"\n',
        encoding="utf-8",
    )
    wrapper.chmod(0o755)
    async with relay.client(**WARM, GEMINI_CLI_PATH=str(wrapper)) as client:
        first = await client.call_tool("gemini-ask", {"prompt": "one"})
        second = await client.call_tool("gemini-ask", {"prompt": "two"})
        await wait_no_cli_processes(relay.home)
    assert text_of(first).startswith("⚠️ ACP unavailable: "), text_of(first)
    assert "running cold." in text_of(first)
    assert "You said: one" in text_of(first)
    assert "ACP unavailable" not in text_of(second)
    assert "You said: two" in text_of(second)


async def test_warm_agy_serves_a_conversations_turns_from_one_process_cold_then_warm_and_leaves_none(
    agy_relay: Relay,
) -> None:
    # Without a relay host the server owns the warm agy, so none may outlive it (a host's outlive servers, and the
    # harness checks that none outlives the host).
    async with agy_relay.client(**WARM, GEMINI_RELAY_HOST="off") as client:
        first = await client.call_tool("gemini-ask", {"prompt": "say hi"})
        second = await client.call_tool("gemini-ask", {"prompt": "again", "conversationId": thread_of(text_of(first))})
    log = (agy_relay.base / "fake-agy.log").read_text(encoding="utf-8").splitlines()
    starts = [json.loads(line) for line in log if '"event": "start"' in line]
    runs = [s for s in starts if "--input-format" in s["argv"]]
    assert len(runs) == 1  # one agy process answered both turns
    assert "You said: again" in text_of(second) and thread_of(text_of(second)) == thread_of(text_of(first))
    # Its receipts: the first turn started the process (cold), the second was served by it (warm).
    assert [(r.structured_content or {})["receipt"]["warm"] for r in (first, second)] == [False, True]
    assert " via agy (cold) · " in text_of(first) and " via agy (warm) · " in text_of(second)
    for start in runs:
        assert not Path(f"/proc/{start['pid']}").exists() or b"Z" in Path(f"/proc/{start['pid']}/stat").read_bytes()


async def test_a_warm_prompt_reads_no_file_through_an_at_and_runs_no_command_unless_allowed(
    warm_world: Relay, warm_client: Client
) -> None:
    fresh_case(warm_world)
    plant(warm_world)
    commands = warm_world.project / ".gemini" / "commands"
    commands.mkdir(parents=True)
    (commands / "x.toml").write_text('prompt = "TEMPLATE-TEXT-5"\n', encoding="utf-8")
    await wait_for_warm_process(warm_world.home)
    plain = await warm_client.call_tool("gemini-ask", {"prompt": f"summarise {HIDDEN}"})
    refused = await warm_client.call_tool("gemini-ask", {"prompt": "/x hello"})
    allowed = await warm_client.call_tool("gemini-ask", {"prompt": "/x hello", "allowSlashCommands": True})
    assert not plain.is_error and not refused.is_error, (text_of(plain), text_of(refused))
    assert leaked(warm_world) == []
    assert "TEMPLATE-TEXT-5" not in json.dumps([r.body for r in warm_world.main_requests()[:2]])
    assert "TEMPLATE-TEXT-5" in json.dumps(warm_world.main_requests()[-1].body) and not allowed.is_error


async def test_a_server_killed_with_sigkill_leaves_no_warm_cli_behind(relay: Relay) -> None:
    pids: list[int] = []
    left: list[int] | None = None
    try:
        # Without a host the server owns its warm CLI; with one, the host does and outlives its servers on purpose.
        async with relay.client(**WARM, GEMINI_RELAY_HOST="off") as client:
            pids = await wait_for_warm_process(relay.home)
            await client.call_tool("gemini-ask", {"prompt": "hi"})
            servers = [p for p in processes_using(relay.home) if b"gemini_relay" in _cmdline(p).split(b"\0")]
            assert len(servers) == 1
            os.kill(servers[0], signal.SIGKILL)
            # The warm CLI reads its stdin from the server: EOF ends it, no signal needed.
            await wait_no_cli_processes(relay.home)
            left = cli_processes(relay.home)
    except BaseException:
        if left is None:
            raise  # the connection dying with the server surfaces on leaving the client, after the checks
    assert pids and left == []


async def test_with_the_host_a_job_is_served_by_the_hosts_warm_cli_and_collected(relay: Relay) -> None:
    async with relay.client(**WARM, GEMINI_RELAY_TOOLSETS="jobs") as client:
        await wait_for_warm_process(relay.home)  # the server asked the host to prewarm at start
        started = await client.call_tool("gemini-run", {"prompt": "warm job"})
        assert not started.is_error, text_of(started)
        job_id = (started.structured_content or {})["job_id"]
        waited = (await client.call_tool("gemini-wait", {"jobId": job_id, "wait": BOUND})).structured_content or {}
    assert waited["state"] == "done" and "You said: warm job" in waited["result"]
    assert acp_processes(relay.home)  # the warm CLI belongs to the host, not to the server that is gone


async def test_servers_whose_environments_differ_only_in_unrelated_variables_share_one_warm_cli(relay: Relay) -> None:
    # Two clients, two servers: one pool in the host serves both (and unrelated variables do not split its key).
    async with (
        relay.client(**WARM, WINDOWID="41943047", OLDPWD="/tmp") as first,
        relay.client(**WARM, WINDOWID="52428807", OLDPWD="/var", SHLVL="3") as second,
    ):
        pids = await wait_for_warm_process(relay.home)
        one = await first.call_tool("gemini-ask", {"prompt": "first window"})
        two = await second.call_tool("gemini-ask", {"prompt": "second window"})
        assert acp_processes(relay.home) == pids and len(pids) == 1  # one ~250 MB CLI, not one per terminal
    assert "You said: first window" in text_of(one) and "You said: second window" in text_of(two)


async def test_with_no_relay_variable_set_the_server_prewarms_and_serves_asks_from_one_warm_cli(relay: Relay) -> None:
    # The README's setup: warm is the default (the RSS ceiling raised as in WARM, for a loaded machine).
    async with relay.client(GEMINI_RELAY_WARM=None, GEMINI_RELAY_WARM_MAX_RSS_MB="4096") as client:
        pids = await wait_for_warm_process(relay.home)  # booted when the server started, before any call
        first = await client.call_tool("gemini-ask", {"prompt": "first"})
        later = await client.call_tool("gemini-ask", {"prompt": "later"})
        assert acp_processes(relay.home) == pids and len(pids) == 1
    assert "You said: first" in text_of(first) and "You said: later" in text_of(later)
    assert len(relay.main_requests()) == 2  # one turn each, no cold CLI beside the warm one
