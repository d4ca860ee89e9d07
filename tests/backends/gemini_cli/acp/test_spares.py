"""Spare sessions against the real CLI: made in the background, never beside a prompt (the CLI is one event loop)."""

from __future__ import annotations

import anyio
import pytest

from gemini_relay.core.events import SessionStarted, TextDelta
from tests.backends.gemini_cli.acp.conftest import BOUND, AcpWorld, collect

pytestmark = pytest.mark.anyio

WOULD_BE_SENT = 2.0  # a spare's session/new answers in ~30-70 ms; this bound only sees that none was sent


async def test_a_spare_is_not_made_while_another_prompt_runs_and_is_made_once_it_ends(world: AcpWorld) -> None:
    async with world.pool() as pool:
        backend = world.backend(pool)
        await collect(backend, world.spec("warm up"))
        warm = pool._warm[0]  # pyright: ignore[reportPrivateUsage]
        with anyio.fail_after(BOUND):
            while not sum(map(len, warm.spares.values())):
                await warm.spare_done.wait()

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
        with anyio.fail_after(BOUND):
            while not sum(map(len, warm.spares.values())):
                await warm.spare_done.wait()
        assert len(warm.created) == sessions + 1


async def test_a_prewarmed_process_has_the_first_new_conversations_session_ready(world: AcpWorld) -> None:
    async with world.pool() as pool:
        backend = world.backend(pool)
        backend.prewarm()
        warm = pool._warm[0]  # pyright: ignore[reportPrivateUsage]
        with anyio.fail_after(BOUND):
            while not sum(map(len, warm.spares.values())):
                await warm.spare_done.wait()
        (spare,) = warm.created
        events = await collect(backend, world.spec("the first ask"))
        started = next(e for e in events if isinstance(e, SessionStarted))
        assert started.session_id == spare
