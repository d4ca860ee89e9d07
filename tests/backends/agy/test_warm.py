"""Warm agy against the fake agy: one stream-json process per live conversation, a turn per stdin line."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import pytest

from gemini_relay.backends.agy.warm import WarmAgyBackend
from gemini_relay.core.result import RunResult
from gemini_relay.errors import RunFailed, RunTimedOut
from tests.backends.agy.conftest import AgyWorld
from tests.backends.agy.test_backend import WAIT, alive, execute, spec_for

pytestmark = pytest.mark.anyio


@asynccontextmanager
async def warm(world: AgyWorld, **env: str) -> AsyncIterator[WarmAgyBackend]:
    backend = WarmAgyBackend(world.settings(GEMINI_RELAY_WARM="on", **env))
    await backend.open()
    try:
        yield backend
    finally:
        await backend.aclose()


async def wait_gone(pids: list[int]) -> None:
    with anyio.fail_after(WAIT):
        while any(alive(pid) for pid in pids):
            await anyio.sleep(0.02)  # polls /proc: no event announces a reaped process


def summary(result: RunResult) -> tuple[object, ...]:
    return (result.text, result.status, result.num_turns, result.notices, result.usage, result.partial)


async def outcome(backend: WarmAgyBackend, world: AgyWorld, prompt: str, **fields: object) -> tuple[object, ...]:
    try:
        result, _ = await execute(backend, spec_for(world, prompt, **fields))
    except RunFailed as exc:
        return (type(exc).__name__, exc.message, exc.reason, exc.retryable, exc.partial_text)
    return summary(result)


async def test_a_conversation_runs_every_turn_in_one_process(world: AgyWorld) -> None:
    async with warm(world) as backend:
        first, _ = await execute(backend, spec_for(world, "hello"))
        pids = backend.live_processes
        cid = first.conversation_id
        second, _ = await execute(backend, spec_for(world, "again", conversation_id=cid))
        third, _ = await execute(backend, spec_for(world, "and again", conversation_id=cid))
        assert backend.live_processes == pids and len(pids) == 1
    assert first.text == "Hello from fake agy! You said: hello"
    assert [r.num_turns for r in (first, second, third)] == [1, 2, 3]
    assert {r.conversation_id for r in (second, third)} == {cid}
    assert third.text == "Hello from fake agy! You said: and again"
    assert len(world.runs()) == 1  # one agy start served the three turns
    await wait_gone(pids)  # aclose stopped it


@pytest.mark.parametrize("prompt", ["hello", "[[agy:unicode]]", "[[agy:big:40]]", "[[agy:quota]]", "[[agy:denied]]"])
async def test_warm_and_cold_give_the_same_outcome_for_the_same_scenario(world: AgyWorld, prompt: str) -> None:
    cold_backend = WarmAgyBackend(world.settings())  # never opened: every run is cold
    cold_start, _ = await execute(cold_backend, spec_for(world, "start"))
    cold = await outcome(cold_backend, world, prompt, conversation_id=cold_start.conversation_id)
    async with warm(world) as backend:
        warm_start, _ = await execute(backend, spec_for(world, "start"))
        served = await outcome(backend, world, prompt, conversation_id=warm_start.conversation_id)
    assert served == cold
    starts = [run["argv"] for run in world.runs()]
    assert len(starts) == 3  # cold: two starts; warm: one start for both turns


async def test_a_turn_with_other_flags_continues_the_conversation_in_a_new_process(world: AgyWorld) -> None:
    async with warm(world) as backend:
        first, _ = await execute(backend, spec_for(world, "hello"))
        pids = backend.live_processes
        second, _ = await execute(
            backend, spec_for(world, "again", conversation_id=first.conversation_id, model="gemini-3.1-pro-high")
        )
        await wait_gone(pids)
        assert len(backend.live_processes) == 1 and backend.live_processes != pids
    assert (second.conversation_id, second.num_turns) == (first.conversation_id, 2)


async def test_an_idle_process_is_stopped_and_the_conversation_continues_cold_started(world: AgyWorld) -> None:
    async with warm(world, GEMINI_RELAY_WARM_IDLE="0.5") as backend:
        first, _ = await execute(backend, spec_for(world, "hello"))
        pids = backend.live_processes
        await wait_gone(pids)
        assert backend.live_processes == []
        second, _ = await execute(backend, spec_for(world, "again", conversation_id=first.conversation_id))
    assert second.num_turns == 2
    assert len(world.runs()) == 2


async def test_a_timed_out_turn_stops_its_process_and_keeps_no_orphan(world: AgyWorld) -> None:
    async with warm(world) as backend:
        first, _ = await execute(backend, spec_for(world, "hello"))
        pids = backend.live_processes
        with pytest.raises(RunTimedOut):
            await execute(
                backend, spec_for(world, "[[agy:hang]]", conversation_id=first.conversation_id, timeout_seconds=1.0)
            )
        await wait_gone(pids)
        assert backend.live_processes == []
        after, _ = await execute(backend, spec_for(world, "after", conversation_id=first.conversation_id))
    assert after.text == "Hello from fake agy! You said: after"


async def test_an_agy_without_input_format_runs_every_turn_cold(world: AgyWorld) -> None:
    world.install(help="old")
    async with warm(world) as backend:
        first, _ = await execute(backend, spec_for(world, "hello"))
        assert backend.live_processes == []
        second, _ = await execute(backend, spec_for(world, "again", conversation_id=first.conversation_id))
    assert second.num_turns == 2
    assert all("-p" in run["argv"] for run in world.runs()) and len(world.runs()) == 2
