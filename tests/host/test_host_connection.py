"""A server's connection to its relay host: a host that went away, stalled or filled up is a classified, retryable
failure or a transparent reconnect, never "internal error"; an idle server holds one connection; a request past the
host's frame limit is refused up front."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from contextlib import contextmanager

import anyio
import pytest
from mcp import Client

from tests.fakes.fake_gemini_api import echo_text
from tests.harness import API_BACKEND, Relay
from tests.host.conftest import host_pids, host_request
from tests.test_server_surface import text_of
from tests.transports.http_server import http_server

pytestmark = pytest.mark.anyio
STALL_BOUND = "3"  # GEMINI_RELAY_HOST_TIMEOUT of the stalled host: the stalled call waits this long


async def burst(client: Client, count: int) -> list[str]:
    """`count` asks at once, each long enough to overlap the others (so each takes a connection of its own)."""
    answers: list[str] = []

    async def ask(index: int) -> None:
        result = await client.call_tool("gemini-ask", {"prompt": f"[[fake:slow:0.3]] burst {index}"})
        assert not result.is_error, text_of(result)
        answers.append(text_of(result))

    async with anyio.create_task_group() as tg:
        for index in range(count):
            tg.start_soon(ask, index)
    return answers


async def host_gone(relay: Relay, pid: int) -> None:
    with anyio.fail_after(20):
        while pid in host_pids(relay):
            await anyio.sleep(0.02)


@contextmanager
def stopped(pid: int) -> Iterator[None]:
    """The process is stopped (SIGSTOP) inside the block and resumed however the block ends."""
    os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(pid, signal.SIGCONT)


async def kill_the_host_after_a_burst(hosted: Relay, client: Client) -> int:
    """A burst of calls, then SIGKILL to the host that served them; returns its pid once it is gone."""
    await burst(client, 4)
    old: int = host_request(hosted, {"op": "status"})[1]["pid"]
    os.kill(old, signal.SIGKILL)
    await host_gone(hosted, old)
    return old


async def test_after_a_burst_a_host_killed_outright_is_replaced_and_the_next_call_answers(hosted: Relay) -> None:
    hosted.env.update(API_BACKEND)  # the connection is tested, not the CLI
    async with hosted.client() as client:
        old = await kill_the_host_after_a_burst(hosted, client)
        again = await client.call_tool("gemini-ask", {"prompt": "after the kill"})
    assert not again.is_error, text_of(again)
    assert echo_text("after the kill") in text_of(again)
    assert host_request(hosted, {"op": "status"})[1]["pid"] != old


async def test_over_http_a_host_killed_after_a_burst_is_replaced_and_the_next_call_answers(hosted: Relay) -> None:
    with http_server(hosted, **API_BACKEND) as server:
        async with server.client() as client:
            await kill_the_host_after_a_burst(hosted, client)
            again = await client.call_tool("gemini-ask", {"prompt": "after the kill"})
    assert not again.is_error, text_of(again)
    assert echo_text("after the kill") in text_of(again)


async def test_after_a_burst_a_host_that_idled_out_is_replaced_and_the_next_call_answers(hosted: Relay) -> None:
    hosted.env.update(API_BACKEND)
    async with hosted.client(GEMINI_RELAY_HOST_IDLE="1") as client:
        await burst(client, 4)
        old = host_pids(hosted)
        assert len(old) == 1
        await host_gone(hosted, old[0])  # the kept connections are not work: the host idles out under the server
        again = await client.call_tool("gemini-ask", {"prompt": "after the idle exit"})
    assert not again.is_error, text_of(again)
    assert echo_text("after the idle exit") in text_of(again)


async def test_an_idle_server_keeps_one_connection_to_its_host_after_a_burst(hosted: Relay) -> None:
    hosted.env.update(API_BACKEND)
    async with hosted.client() as client:
        await burst(client, 4)
        with anyio.fail_after(15):  # the host counts a connection closed once it reads its end
            while (connections := host_request(hosted, {"op": "status"})[1]["connections"]) > 2:
                await anyio.sleep(0.05)
        answer = await client.call_tool("gemini-ask", {"prompt": "on the kept one"})
    assert connections == 2  # the server's one kept channel, and the status request's own
    assert not answer.is_error and echo_text("on the kept one") in text_of(answer)


async def test_a_stalled_host_fails_a_call_as_host_unresponsive_and_retryable_and_a_resumed_one_answers(
    hosted: Relay,
) -> None:
    hosted.env.update(API_BACKEND)
    async with hosted.client(GEMINI_RELAY_HOST_TIMEOUT=STALL_BOUND) as client:
        first = await client.call_tool("gemini-ask", {"prompt": "before the stall"})
        pid = host_request(hosted, {"op": "status"})[1]["pid"]
        with stopped(pid):
            stalled = await client.call_tool("gemini-ask", {"prompt": "during the stall"})
        again = await client.call_tool("gemini-ask", {"prompt": "after the stall"})
    assert not first.is_error, text_of(first)
    text = text_of(stalled)
    assert stalled.is_error and "internal error" not in text
    assert "host_unresponsive" in text and "retryable" in text and f"did not answer within {STALL_BOUND}s" in text
    assert "Retry the call" in text
    assert not again.is_error and echo_text("after the stall") in text_of(again)


async def test_a_prompt_past_the_hosts_frame_limit_is_refused_up_front_naming_the_limit(hosted: Relay) -> None:
    hosted.env.update(API_BACKEND)
    async with hosted.client() as client:
        refused = await client.call_tool("gemini-ask", {"prompt": "x" * (17 * 1024 * 1024)})
        fits = await client.call_tool("gemini-ask", {"prompt": "a small one"})
    text = text_of(refused)
    assert refused.is_error and "internal error" not in text
    assert "Invalid arguments for gemini-ask: prompt: the request is 17.0 MiB" in text and "limit of 16 MiB" in text
    assert not fits.is_error and echo_text("a small one") in text_of(fits)
    assert not hosted.turn_requests()[:-1]  # the big one never reached the model
