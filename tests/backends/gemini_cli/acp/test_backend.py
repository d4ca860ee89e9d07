"""AcpBackend against the real Gemini CLI in ACP mode and the emulator: answers, continuation, cancel, crash,
permissions."""

from __future__ import annotations

import contextlib
import os
import signal
import time
import uuid
from collections.abc import AsyncIterator

import anyio
import pytest

from gemini_relay.backends.gemini_cli.acp import AcpBackend, WarmPool
from gemini_relay.core.events import (
    AgentEvent,
    Finished,
    RunNotice,
    SessionStarted,
    TextDelta,
)
from gemini_relay.core.spec import RunSpec
from gemini_relay.core.vocabulary import BackendName
from gemini_relay.errors import RunFailed, RunTimedOut
from gemini_relay.jobs.engine.engine import RunEngine
from gemini_relay.jobs.engine.record import RunRecord
from gemini_relay.jobs.engine.runners import InlineRunner
from gemini_relay.streams.transcript import Transcript
from gemini_relay.supervise.groups import group_alive
from tests.backends.gemini_cli.acp.conftest import BOUND, AcpWorld, collect, text_of
from tests.fakes.fake_gemini_api import SLOW_CHUNKS

pytestmark = pytest.mark.anyio

CANCEL_BOUND = 3.0  # cancel -> the turn settled (the CLI answers session/cancel in milliseconds)


class _BackendDeadline(InlineRunner):
    deadline_margin = 5.0  # the backend's own deadline stops the turn, not the engine's


def recorded(backend: AcpBackend, spec: RunSpec) -> tuple[RunEngine, RunRecord]:
    """The backend behind an engine, as the host runs it: the run's events are folded into its record, whose text a
    failure keeps (the backend's own failures carry none: the translator keeps no transcript)."""
    engine = RunEngine({BackendName(backend.name): backend}, max_concurrent=4, runner=_BackendDeadline())
    return engine, engine.new_record(spec, BackendName(backend.name))


def folded(spec: RunSpec, events: list[AgentEvent]) -> Transcript:
    record = Transcript(spec)
    for event in events:
        record.apply(event)
    return record


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"  # module scope: the shared pool's task group lives in the one event loop of the module


@pytest.fixture
def world(module_world: AcpWorld) -> AcpWorld:
    return module_world


@pytest.fixture(scope="module")
async def pool(module_world: AcpWorld) -> AsyncIterator[WarmPool]:
    """One warm pool, one warm CLI, for the module: each test's runs have sessions of their own, and a test that
    kills the process leaves the pool to boot the next one. Warm == cold per scenario is the parity matrix's
    (tests/backends/test_warm_cold_parity.py)."""
    async with module_world.pool() as shared:
        yield shared


async def test_a_run_starts_a_conversation_and_finishes_with_usage(world: AcpWorld, pool: WarmPool) -> None:
    before = len(world.api.requests)
    events = await collect(world.backend(pool), world.spec("hi"))
    started = events[0]
    assert isinstance(started, SessionStarted) and started.model == "gemini-2.5-pro"
    finished = events[-1]
    assert isinstance(finished, Finished) and finished.ok and finished.session_id == started.session_id
    assert finished.usage is not None and finished.usage.input_tokens == 12
    assert (
        [r for r in world.api.requests[before:] if r.kind == "main"][0]
        .headers.get("user-agent", "")
        .startswith("GeminiCLI-acp/")
    )


async def test_the_prompt_is_on_its_way_before_the_session_is_announced(world: AcpWorld, pool: WarmPool) -> None:
    before = len(world.api.requests)
    run = world.backend(pool).run(world.spec("hi"))
    async with contextlib.aclosing(run):
        with anyio.fail_after(BOUND):
            first = await anext(run)
        assert isinstance(first, SessionStarted)
        # The caller has not taken anything past the announcement (the host records it meanwhile), and still the
        # prompt reaches the API.
        await anyio.to_thread.run_sync(world.api.wait_for_requests, before + 1, BOUND)
        rest = [event async for event in run]
    assert isinstance(rest[-1], Finished) and rest[-1].ok


async def test_a_cold_conversation_continues_warm_and_a_warm_one_in_a_new_process(
    world: AcpWorld, pool: WarmPool
) -> None:
    # A folder of its own: a cold CLI's start deletes its project's recordings without turns (the pool's spares).
    folder, cold_id = world.folder("cold-then-warm"), str(uuid.uuid4())
    world.cold("first turn, cold", "--session-id", cold_id, cwd=folder)
    backend = world.backend(pool)
    loaded = await collect(backend, world.spec("[[fake:history]]", conversation_id=cold_id, cwd=folder))
    again = await collect(backend, world.spec("[[fake:history]]", conversation_id=cold_id, cwd=folder))
    assert text_of(loaded) == "turns=2"  # the replayed history reached the model, not the answer
    assert text_of(again) == "turns=3"
    assert isinstance(loaded[0], SessionStarted) and loaded[0].session_id == cold_id
    async with world.pool() as fresh:  # a fresh process: the warm turns were saved and load too
        reloaded = await collect(
            world.backend(fresh), world.spec("[[fake:history]]", conversation_id=cold_id, cwd=folder)
        )
    assert text_of(reloaded) == "turns=4"
    # ...and the cold path continues what the warm path wrote.
    resumed = world.cold("[[fake:history]]", "--resume", cold_id, cwd=folder)
    assert text_of(resumed) == "turns=5"


async def test_a_warm_conversation_continues_in_the_same_session(world: AcpWorld, pool: WarmPool) -> None:
    backend = world.backend(pool)
    first = await collect(backend, world.spec("hello"))
    assert isinstance(first[0], SessionStarted)
    second = await collect(backend, world.spec("[[fake:history]]", conversation_id=first[0].session_id))
    assert text_of(second) == "turns=2"


async def test_an_unknown_conversation_fails_with_the_cold_paths_message(world: AcpWorld, pool: WarmPool) -> None:
    with pytest.raises(RunFailed, match="Unknown conversationId no-such-id"):
        await collect(world.backend(pool), world.spec("hi", conversation_id="no-such-id"))


async def test_closing_the_stream_cancels_the_turn_and_the_next_prompt_works(world: AcpWorld, pool: WarmPool) -> None:
    backend = world.backend(pool)
    run = backend.run(world.spec("[[fake:slow:2]]"))
    conversation = ""
    with anyio.fail_after(BOUND):
        async for event in run:
            if isinstance(event, SessionStarted):
                conversation = event.session_id
            if isinstance(event, TextDelta):
                break
    pid = pool.processes[0]
    started = time.monotonic()
    await run.aclose()
    assert time.monotonic() - started < CANCEL_BOUND
    after = await collect(backend, world.spec("[[fake:history]]", conversation_id=conversation))
    assert text_of(after).startswith("turns=")
    assert pool.processes == [pid]  # the turn was cancelled, not the process


async def test_cancelling_the_consuming_task_cancels_the_turn(world: AcpWorld, pool: WarmPool) -> None:
    backend = world.backend(pool)
    got_text = anyio.Event()

    async def consume() -> None:
        async for event in backend.run(world.spec("[[fake:slow:2]]")):
            if isinstance(event, TextDelta):
                got_text.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(consume)
        with anyio.fail_after(BOUND):
            await got_text.wait()
        started = time.monotonic()
        tg.cancel_scope.cancel()
    assert time.monotonic() - started < CANCEL_BOUND
    assert text_of(await collect(backend, world.spec("hi"))).endswith("You said: hi")


async def test_a_timeout_cancels_the_turn_and_keeps_the_partial_text(world: AcpWorld, pool: WarmPool) -> None:
    backend = world.backend(pool)
    await collect(backend, world.spec("warm up"))
    engine, record = recorded(backend, world.spec("[[fake:slow:1]]", timeout_seconds=1.5))
    with pytest.raises(RunTimedOut) as caught, anyio.fail_after(BOUND):
        await engine.execute(record)
    assert caught.value.partial_text.startswith(SLOW_CHUNKS[0])
    assert "gemini timed out after 1.5s" in str(caught.value)


async def test_a_cli_killed_mid_run_fails_with_the_partial_text_and_leaves_no_process(
    world: AcpWorld, pool: WarmPool
) -> None:
    backend = world.backend(pool)
    engine, record = recorded(backend, world.spec("[[fake:slow:2]]"))
    killed: list[int] = []

    def kill_at_the_first_text(event: AgentEvent) -> None:
        if isinstance(event, TextDelta) and not killed:
            killed.append(pool.processes[0])
            os.killpg(killed[0], signal.SIGKILL)

    record.listener = kill_at_the_first_text
    with pytest.raises(RunFailed, match="killed by signal 9") as caught, anyio.fail_after(BOUND):
        await engine.execute(record)
    assert caught.value.partial_text == SLOW_CHUNKS[0]
    pid = killed[0]
    with anyio.fail_after(BOUND):
        while group_alive(pid) or pool.processes:
            await anyio.sleep(0.02)  # polls /proc: no event announces a reaped group
    assert text_of(await collect(backend, world.spec("hi"))).endswith("You said: hi")  # a new process


@pytest.mark.parametrize(
    ("fields", "written", "refused_by"),
    [
        ({}, False, "read-only tools"),
        ({"mode": "plan"}, False, "denied by policy"),
        ({"mode": "accept-edits"}, True, None),
        ({"skip_permissions": True}, True, None),
    ],
)
async def test_a_write_is_allowed_or_refused_by_the_runs_mode(
    world: AcpWorld, pool: WarmPool, fields: dict[str, object], written: bool, refused_by: str | None
) -> None:
    folder = world.folder(f"write-{'-'.join(map(str, fields.values())) or 'default'}")
    spec = world.spec("[[fake:write_file:out.txt]]", cwd=folder, **fields)
    events = await collect(world.backend(pool), spec)
    assert (folder / "out.txt").exists() is written
    notices = [e.message for e in events if isinstance(e, RunNotice)]
    assert isinstance(events[-1], Finished)
    if refused_by is None:
        assert notices == [] and folded(spec, events).denied_actions == []
    else:
        assert len(notices) == 1 and refused_by in notices[0]
        assert folded(spec, events).denied_actions == ["write_file"]  # the run's record: the translator keeps none


async def test_a_model_set_per_run_reaches_the_api(world: AcpWorld, pool: WarmPool) -> None:
    backend, before = world.backend(pool), len(world.api.requests)
    first = await collect(backend, world.spec("hi"))
    assert isinstance(first[0], SessionStarted)
    await collect(backend, world.spec("hi", model="gemini-2.5-flash", conversation_id=first[0].session_id))
    paths = [r.path for r in world.api.requests[before:] if r.kind == "main"]
    assert "gemini-2.5-pro" in paths[0] and "gemini-2.5-flash" in paths[1]


async def test_a_quota_error_fails_like_the_cold_path(world: AcpWorld, pool: WarmPool) -> None:
    with pytest.raises(RunFailed, match=r"HTTP 429") as caught:
        await collect(world.backend(pool), world.spec("[[fake:quota]]"))
    assert caught.value.http_status == 429


def test_the_backend_has_the_gemini_identity(world: AcpWorld) -> None:
    backend = AcpBackend(world.settings(), WarmPool())
    assert backend.command == "gemini" and backend.name == "gemini"
