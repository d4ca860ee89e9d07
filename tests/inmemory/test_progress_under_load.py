"""Keepalives under load: registering a call's run is blocking work for a durable runner (a socket round trip to the
relay host, store writes), and it must not stall the keepalives of the calls already running or queued."""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import pytest
from mcp import Client

from gemini_relay.app import build_deps
from gemini_relay.core.vocabulary import BackendName
from gemini_relay.jobs.engine import RunEngine
from gemini_relay.jobs.models import RunRecord
from gemini_relay.jobs.runners import InlineRunner, JobOptions
from gemini_relay.server import RelayServer
from tests.inmemory.conftest import InMemory, text_of
from tests.inmemory.scripted import Script, answer

pytestmark = pytest.mark.anyio
BLOCK_BOUND = 5.0  # a create still blocked after this was never released by keepalives: they had stalled
QUEUED = 6


class BlockingCreateRunner(InlineRunner):
    """An inline runner whose create blocks its thread, as HostRunner's does for the host's reply, until released
    (every create after the first)."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.unblock = threading.Event()
        self.timed_out = 0
        self._creates = 0
        self._lock = threading.Lock()

    def create(self, record: RunRecord, options: JobOptions) -> RunRecord:
        with self._lock:
            self._creates += 1
            first = self._creates == 1
        if not first:
            self.entered.set()
            if not self.unblock.wait(BLOCK_BOUND):
                with self._lock:
                    self.timed_out += 1
        return record


@asynccontextmanager
async def client_with(relay: InMemory, runner: BlockingCreateRunner) -> AsyncIterator[Client]:
    deps = build_deps(
        relay.settings(GEMINI_RELAY_PROGRESS_INTERVAL="0.05"),
        durable=False,
        backends={BackendName.GEMINI: relay.backend},
    )
    deps.engine = RunEngine(deps.registry.backends, max_concurrent=1, runners={BackendName.GEMINI: runner})
    async with Client(RelayServer(deps).build(), mode="legacy") as client:
        yield client


async def test_queued_calls_keep_their_keepalives_while_new_calls_are_being_created(relay: InMemory) -> None:
    runner = BlockingCreateRunner()
    hold = anyio.Event()  # the first call holds the only slot until every other call has waited in the queue
    running = anyio.Event()
    first_seen: list[str | None] = []
    waiting = {n: anyio.Event() for n in range(QUEUED)}
    answers: dict[int, str] = {}

    async def on_first(progress: float, total: float | None, message: str | None) -> None:
        first_seen.append(message)
        if 0 < progress < 100:
            running.set()
            # keepalives of the running call go on while the others' creates block their threads
            if runner.entered.is_set() and len(first_seen) >= 3:
                runner.unblock.set()

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
        async with client_with(relay, runner) as client, anyio.create_task_group() as tg:
            tg.start_soon(first, client)
            await running.wait()
            for n in range(QUEUED):
                tg.start_soon(queued, client, n)
    assert runner.timed_out == 0, "a blocked create stalled the keepalives of the running call"
    assert sorted(answers) == [-1, *range(QUEUED)]
    assert sorted(a.split("\n")[1] for a in answers.values()) == sorted(
        ["first answer"] + [f"answer {n}" for n in range(QUEUED)]
    )
