"""Spare sessions against the real CLI: made in the background, never beside a prompt (the CLI is one event loop)."""

from __future__ import annotations

import contextlib

import anyio
import anyio.to_thread
import pytest

from gemini_relay.backends.gemini_cli.acp import AcpBackend, WarmPool
from gemini_relay.backends.gemini_cli.acp.sessions import WarmProcess, take_spare
from gemini_relay.backends.gemini_cli.sessions import header_id, latest_chats_file
from gemini_relay.core.events import AgentEvent, Finished, SessionStarted, TextDelta
from tests.backends.gemini_cli.acp.conftest import BOUND, AcpWorld, collect, every_worker_thread_busy
from tests.fakes.fake_gemini_api import GATE_TEXT

pytestmark = pytest.mark.anyio

WOULD_BE_SENT = 2.0  # a spare's session/new answers in ~30-70 ms; this bound only sees that none was sent


async def spares_ready(warm: WarmProcess, count: int) -> None:
    with anyio.fail_after(BOUND):
        while sum(map(len, warm.spares.values())) < count:
            await warm.spare_done.wait()


async def prewarmed_spares(pool: WarmPool, backend: AcpBackend) -> list[str]:
    """Prewarm one process and wait until it is ready: the session ids of its spares, in the order fresh asks take
    them."""
    backend.prewarm()
    warm = pool._warm[0]  # pyright: ignore[reportPrivateUsage]
    with anyio.fail_after(BOUND):
        await warm.ready.wait()
    return [state.session_id for states in warm.spares.values() for state in states]


async def prewarmed_spare(pool: WarmPool, backend: AcpBackend) -> str:
    """Prewarm one process: the session id the first fresh ask should take."""
    return (await prewarmed_spares(pool, backend))[0]


def session_of(events: list[AgentEvent]) -> str:
    return next(e.session_id for e in events if isinstance(e, SessionStarted))


async def test_a_spare_is_not_made_while_another_prompt_runs_and_is_made_once_it_ends(world: AcpWorld) -> None:
    async with world.pool() as pool:
        backend = world.backend(pool)
        await collect(backend, world.spec("warm up"))
        warm = pool._warm[0]  # pyright: ignore[reportPrivateUsage]
        await spares_ready(warm, 1)

        stalled = backend.run(world.spec("[[fake:stall]] a long answer"))  # takes the spare
        with anyio.fail_after(BOUND):
            async for event in stalled:
                if isinstance(event, TextDelta):
                    break  # its prompt is in flight
        await collect(backend, world.spec("a short one beside it"))  # no spare left: it makes its own session
        sessions = len(warm.created)
        with anyio.move_on_after(WOULD_BE_SENT):
            await warm.spare_done.wait()
        assert len(warm.created) == sessions, "a spare's session/new went to the CLI beside the running prompt"

        await stalled.aclose()  # the turn is cancelled; then the spare is made
        await spares_ready(warm, 1)
        assert len(warm.created) == sessions + 1


async def test_a_prewarmed_process_has_sessions_ready_for_the_first_ask_and_the_one_right_after_it(
    world: AcpWorld,
) -> None:
    async with world.pool() as pool:
        backend = world.backend(pool)
        spares = await prewarmed_spares(pool, backend)
        first = await collect(backend, world.spec("the first ask"))
        second = await collect(backend, world.spec("and one sent as it ends"))  # no quiet moment between them
        assert [session_of(first), session_of(second)] == spares, "the second ask waited for a session/new"


async def test_a_prewarmed_process_has_the_first_new_conversations_session_ready(world: AcpWorld) -> None:
    async with world.pool() as pool:
        backend = world.backend(pool)
        spare = await prewarmed_spare(pool, backend)
        events = await collect(backend, world.spec("the first ask"))
        assert session_of(events) == spare


async def test_a_spare_whose_recording_a_cold_cli_deleted_is_put_back_without_a_worker_thread_and_resumable(
    world: AcpWorld,
) -> None:
    async with world.pool() as pool:
        backend = world.backend(pool)
        spare = await prewarmed_spare(pool, backend)
        assert latest_chats_file(world.home, spare) is not None

        await anyio.to_thread.run_sync(world.cold, "a bare run in the same project")
        # The CLI's session cleanup (on by default) deletes every recording without a prompt as it starts.
        assert latest_chats_file(world.home, spare) is None

        async with every_worker_thread_busy():  # the usual repair is one small write, done in the event loop
            with anyio.fail_after(BOUND):
                events = await collect(backend, world.spec("the first warm ask"))
        assert session_of(events) == spare, "the spare was dropped and the ask paid its own session/new"
    recording = latest_chats_file(world.home, spare)
    assert recording is not None and header_id(recording) == spare
    resumed = await anyio.to_thread.run_sync(world.cold, "go on", "--resume", spare)
    assert any(isinstance(e, TextDelta) for e in resumed)


async def test_back_to_back_fresh_asks_each_take_a_spare_made_before_them(world: AcpWorld) -> None:
    async with world.pool() as pool:
        backend = world.backend(pool)
        await collect(backend, world.spec("warm up"))
        warm = pool._warm[0]  # pyright: ignore[reportPrivateUsage]
        await spares_ready(warm, 2)  # the second after a quiet moment
        ready = {state.session_id for states in warm.spares.values() for state in states}

        taken: list[str] = []
        for prompt in ("one ask", "and the next at once"):
            events = await collect(backend, world.spec(prompt))
            taken.append(session_of(events))
        # The second found a spare ready, not one whose session/new went to the CLI as the first ended.
        assert set(taken) <= ready and len(taken) == 2


async def test_a_ready_spare_is_taken_without_waiting_for_a_worker_thread(world: AcpWorld) -> None:
    async with world.pool() as pool:
        backend = world.backend(pool)
        spare = await prewarmed_spare(pool, backend)
        warm = pool._warm[0]  # pyright: ignore[reportPrivateUsage]
        (key,) = warm.spares
        async with every_worker_thread_busy():
            with anyio.fail_after(BOUND):
                state = await take_spare(warm, key)
        assert state is not None and state.session_id == spare


async def test_a_fresh_ask_served_from_a_ready_spare_needs_no_worker_thread(world: AcpWorld) -> None:
    async with world.pool() as pool:
        backend = world.backend(pool)
        spare = await prewarmed_spare(pool, backend)
        async with every_worker_thread_busy():
            with anyio.fail_after(BOUND):
                events = await collect(backend, world.spec("a fresh ask"))
        assert session_of(events) == spare
        finished = [e for e in events if isinstance(e, Finished)]
        assert finished and finished[0].usage is not None  # the recording was read: the call's usage is in it


async def test_a_spare_whose_recording_a_starting_cli_deletes_mid_turn_still_answers(world: AcpWorld) -> None:
    async with world.pool() as pool:
        backend = world.backend(pool)
        spare = await prewarmed_spare(pool, backend)
        recording = latest_chats_file(world.home, spare)
        assert recording is not None
        world.api.gate.clear()
        before = len(world.api.requests)
        run = backend.run(world.spec("[[fake:gate]]"))
        async with contextlib.aclosing(run):
            with anyio.fail_after(BOUND):
                assert isinstance(await anext(run), SessionStarted)
                await anyio.to_thread.run_sync(world.api.wait_for_requests, before + 1, BOUND)
            # The prompt is recorded; a CLI starting now in the project (its session cleanup read the file while it
            # was prompt-less) deletes it, and the warm CLI records the answer into a new, headless file.
            recording.unlink()
            world.api.gate.set()
            with anyio.fail_after(BOUND):
                rest = [event async for event in run]
    finished = rest[-1]
    assert isinstance(finished, Finished) and finished.ok, "the answer arrived whole but was called cut short"
    assert "".join(e.text for e in rest if isinstance(e, TextDelta)) == GATE_TEXT
