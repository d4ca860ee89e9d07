"""Keepalives under load: calls queued behind the executor's cap, created while another call runs, each keep their
own keepalives (creating a run is a round trip to the executor that must not stall the calls already in flight)."""

from __future__ import annotations

import anyio
import pytest
from mcp import Client

from tests.inmemory.conftest import InMemory, text_of
from tests.inmemory.scripted import Script, answer

pytestmark = pytest.mark.anyio
BLOCK_BOUND = 5.0  # a create still blocked after this was never released by keepalives: they had stalled
QUEUED = 6


async def test_queued_calls_keep_their_keepalives_while_new_calls_are_being_created(relay: InMemory) -> None:
    hold = anyio.Event()  # the first call holds the only slot until every other call has waited in the queue
    running = anyio.Event()
    first_seen: list[str | None] = []
    waiting = {n: anyio.Event() for n in range(QUEUED)}
    answers: dict[int, str] = {}

    async def on_first(progress: float, total: float | None, message: str | None) -> None:
        first_seen.append(message)
        if 0 < progress < 100:
            running.set()

    async def first(client: Client) -> None:
        result = await client.call_tool("gemini-ask", {"prompt": "first"}, progress_callback=on_first)
        answers[-1] = text_of(result)

    async def queued(client: Client, n: int) -> None:
        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            if message is not None and "Waiting in the queue" in message:
                waiting[n].set()
                if all(e.is_set() for e in waiting.values()):
                    hold.set()

        result = await client.call_tool("gemini-ask", {"prompt": f"q{n}"}, progress_callback=on_progress)
        answers[n] = text_of(result)

    relay.backend.queue(Script(deltas=("first answer",), hold=hold))
    for n in range(QUEUED):
        relay.backend.queue(answer(f"answer {n}"))
    with anyio.fail_after(20):
        async with (
            relay.client(GEMINI_RELAY_PROGRESS_INTERVAL="0.05", GEMINI_RELAY_MAX_CONCURRENT="1") as client,
            anyio.create_task_group() as tg,
        ):
            tg.start_soon(first, client)
            await running.wait()
            for n in range(QUEUED):
                tg.start_soon(queued, client, n)
    assert len(first_seen) >= 2, "the running call's keepalives stalled while the others were created"
    assert sorted(answers) == [-1, *range(QUEUED)]
    assert sorted(a.split("\n")[1] for a in answers.values()) == sorted(
        ["first answer"] + [f"answer {n}" for n in range(QUEUED)]
    )
