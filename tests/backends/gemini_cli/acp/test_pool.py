"""WarmPool against the real CLI: one process per key, cap, idle eviction, recycling, prewarm, no orphan."""

from __future__ import annotations

import anyio
import pytest

from gemini_relay.backends.gemini_cli.acp import AcpBackend, AcpHandshakeError, WarmPool
from gemini_relay.backends.gemini_cli.acp.session_files import _has_turns as has_turns  # pyright: ignore[reportPrivateUsage]
from gemini_relay.backends.gemini_cli.acp.sessions import group_rss
from gemini_relay.backends.gemini_cli.sessions import list_conversations
from gemini_relay.core.events import SessionStarted
from gemini_relay.errors import RunFailed
from gemini_relay.supervise.groups import group_alive
from tests.backends.gemini_cli.acp.conftest import BOUND, AcpWorld, collect, every_worker_thread_busy, text_of

pytestmark = pytest.mark.anyio


async def wait_until_gone(pids: list[int]) -> None:
    with anyio.fail_after(BOUND):
        while any(group_alive(pid) for pid in pids):
            await anyio.sleep(0.02)  # polls /proc: no event announces a reaped process group


async def first_turn(world: AcpWorld, backend: AcpBackend, pool: WarmPool, prompt: str) -> tuple[str, int]:
    """One prompt in a fresh conversation: that conversation's id, and the pid of the process that answered."""
    events = await collect(backend, world.spec(prompt))
    assert isinstance(events[0], SessionStarted)
    return events[0].session_id, pool.processes[0]


async def test_concurrent_conversations_share_one_process(world: AcpWorld) -> None:
    async with world.pool() as pool:
        backend = world.backend(pool)
        answers: list[str] = []

        async def ask(n: int) -> None:
            answers.append(text_of(await collect(backend, world.spec(f"question {n}"))))

        async with anyio.create_task_group() as tg:
            for n in range(4):
                tg.start_soon(ask, n)
        assert sorted(answers) == sorted(f"Hello from fake Gemini! You said: question {n}" for n in range(4))
        assert len(pool.processes) == 1


async def test_aclose_stops_every_child(world: AcpWorld) -> None:
    async with world.pool() as pool:
        await collect(world.backend(pool), world.spec("hi"))
        pids = pool.processes
        assert len(pids) == 1 and group_alive(pids[0])
    assert not group_alive(pids[0])
    assert world.cli_processes() == []


async def test_cancelling_the_owning_task_leaves_no_process(world: AcpWorld) -> None:
    started = anyio.Event()
    pids: list[int] = []

    async def owner() -> None:
        async with world.pool() as pool:
            await collect(world.backend(pool), world.spec("hi"))
            pids.extend(pool.processes)
            started.set()
            await anyio.sleep_forever()

    async with anyio.create_task_group() as tg:
        tg.start_soon(owner)
        with anyio.fail_after(BOUND):
            await started.wait()
        tg.cancel_scope.cancel()
    assert pids and not group_alive(pids[0])


async def test_prewarm_starts_a_process_the_first_prompt_then_uses(world: AcpWorld) -> None:
    async with world.pool() as pool:
        backend = world.backend(pool)
        backend.prewarm()
        with anyio.fail_after(BOUND):
            while not pool.processes:
                await anyio.sleep(0.02)  # the background start has no event of its own for the test
        pid = pool.processes[0]
        await collect(backend, world.spec("hi"))
        assert pool.processes == [pid]


async def test_an_idle_process_is_stopped_and_the_conversation_continues_in_a_new_one(world: AcpWorld) -> None:
    async with world.pool(idle_seconds=0.5) as pool:
        backend = world.backend(pool)
        conversation, pid = await first_turn(world, backend, pool, "hello")
        await wait_until_gone([pid])
        assert pool.processes == []
        later = await collect(backend, world.spec("[[fake:history]]", conversation_id=conversation))
        assert text_of(later) == "turns=2"
        assert pool.processes and pool.processes != [pid]


async def test_a_process_is_recycled_after_max_prompts(world: AcpWorld) -> None:
    async with world.pool(max_prompts=2) as pool:
        backend = world.backend(pool)
        conversation, pid = await first_turn(world, backend, pool, "one")
        await collect(backend, world.spec("two", conversation_id=conversation))
        await wait_until_gone([pid])
        third = await collect(backend, world.spec("[[fake:history]]", conversation_id=conversation))
        assert text_of(third) == "turns=3"
        assert pool.processes != [pid]


async def test_a_process_past_the_memory_ceiling_is_recycled_and_its_successor_booted(world: AcpWorld) -> None:
    async with world.pool() as pool:
        backend = world.backend(pool)
        conversation, pid = await first_turn(world, backend, pool, "hi")
        assert group_rss(pid) > 50 * 1024 * 1024  # a live CLI holds far more than the 1-byte ceiling below
        pool.max_rss_bytes = 1
        pool.check_now()
        await wait_until_gone([pid])
        pool.max_rss_bytes = 1 << 40
        with anyio.fail_after(BOUND):
            while not pool.processes:
                await anyio.sleep(0.02)  # the successor boots in the background; no event tells the test
        successor = pool.processes
        later = await collect(backend, world.spec("[[fake:history]]", conversation_id=conversation))
        assert text_of(later) == "turns=2"
        assert pool.processes == successor != [pid]


async def test_a_prompts_answer_does_not_wait_for_the_memory_check(world: AcpWorld) -> None:
    async with world.pool() as pool:
        backend = world.backend(pool)
        backend.prewarm()  # its first spare is ready with its recording: the ask below needs no worker thread
        warm = pool._warm[0]  # pyright: ignore[reportPrivateUsage]
        with anyio.fail_after(BOUND):
            await warm.ready.wait()
        pid = pool.processes[0]
        pool.max_rss_bytes = 1  # the next check finds the process over its ceiling...
        warm.rss_checked = 0.0  # ...and is due as the next prompt ends
        async with every_worker_thread_busy():
            answer = await collect(backend, world.spec("hi"))
            assert text_of(answer).endswith("hi")
            assert warm.successor is None and not warm.draining, "the answer waited for the memory check"
        await wait_until_gone([pid])  # measured once a worker thread is free: over the ceiling, replaced
        pool.max_rss_bytes = 1 << 40


async def test_a_process_holding_max_sessions_is_recycled(world: AcpWorld) -> None:
    async with world.pool(max_sessions=3) as pool:
        backend = world.backend(pool)
        await collect(backend, world.spec("one"))
        pid = pool.processes[0]
        await collect(backend, world.spec("two"))  # two sessions plus a spare: three
        await wait_until_gone([pid])
        assert text_of(await collect(backend, world.spec("three"))).endswith("three")
        assert pool.processes and pool.processes != [pid]


async def test_four_concurrent_fresh_asks_are_served_from_spares_the_second_time(world: AcpWorld) -> None:
    async with world.pool() as pool:
        backend = world.backend(pool)
        await collect(backend, world.spec("warm up"))

        async def burst() -> None:
            async with anyio.create_task_group() as tg:
                for n in range(4):
                    tg.start_soon(collect, backend, world.spec(f"ask {n}"))

        await burst()  # the first burst finds one spare and raises the spare count for its key
        warm = pool._warm[0]  # pyright: ignore[reportPrivateUsage]
        with anyio.fail_after(BOUND):
            while sum(map(len, warm.spares.values())) < 4:
                await warm.spare_done.wait()
        await burst()
        assert pool.processes == [warm.connection.pid] if warm.connection else False


async def test_the_pool_cap_evicts_the_least_recently_used_idle_process(world: AcpWorld) -> None:
    async with world.pool(max_processes=1) as pool:
        first = world.backend(pool)
        other = world.backend(pool, GEMINI_CLI_TRUST_WORKSPACE="true")  # another env: another key
        await collect(first, world.spec("hi"))
        pid = pool.processes[0]
        await collect(other, world.spec("hi"))
        assert len(pool.processes) == 1 and pool.processes != [pid]
        assert not group_alive(pid)


async def test_a_binary_that_cannot_speak_acp_is_a_handshake_error(world: AcpWorld) -> None:
    fake = world.base / "not-gemini"
    fake.write_text("#!/bin/sh\necho 'unknown option --acp' >&2\nexit 2\n", encoding="utf-8")
    fake.chmod(0o755)
    async with WarmPool(grace=1.0) as pool:
        backend = world.backend(pool, GEMINI_CLI_PATH=str(fake))
        with pytest.raises(AcpHandshakeError, match="unknown option --acp"):
            await collect(backend, world.spec("hi"))
        with pytest.raises(AcpHandshakeError):  # remembered: no second boot attempt right away
            await collect(backend, world.spec("hi"))


async def test_a_closed_pool_leaves_only_conversations_with_turns_on_disk(world: AcpWorld) -> None:
    async with world.pool() as pool:
        backend = world.backend(pool)
        first = await collect(backend, world.spec("one"))
        await collect(backend, world.spec("two"))
        assert isinstance(first[0], SessionStarted)
        with pytest.raises(RunFailed):
            await collect(backend, world.spec("x", conversation_id="f418b4f2-6aa2-47e6-a247-419c7e6529a2"))
    files = list(world.home.glob(".gemini/tmp/*/chats/session-*.jsonl"))
    assert [f for f in files if not has_turns(f)] == []
    assert len(files) == 2
    listed = list_conversations(world.home, 20)
    assert first[0].session_id in {c.id for c in listed} and len(listed) == 2


async def test_a_replacement_is_ready_before_the_process_it_replaces_retires(world: AcpWorld) -> None:
    """The ask after the cap does not wait for a boot: the old process serves until its successor is ready."""
    async with world.pool(max_prompts=1) as pool:
        backend = world.backend(pool)
        conversation, old = await first_turn(world, backend, pool, "one")  # the cap: its successor boots now
        after_cap = await collect(backend, world.spec("two"))
        await wait_until_gone([old])
        new = pool.processes[0]
        third = await collect(backend, world.spec("[[fake:history]]", conversation_id=conversation))
        events = list(pool.events)
    assert text_of(after_cap).endswith("two") and text_of(third) == "turns=2"
    assert new != old
    assert events.index(("ready", new)) < events.index(("retired", old))


async def test_the_cap_never_evicts_a_process_running_a_prompt(world: AcpWorld) -> None:
    """A new key meets a full pool whose only process runs a prompt: it waits, and that prompt finishes."""
    async with world.pool(max_processes=1) as pool:
        first = world.backend(pool)
        other = world.backend(pool, GEMINI_CLI_TRUST_WORKSPACE="true")  # another env: another key
        async with anyio.create_task_group() as tg:
            answers: dict[str, str] = {}

            async def ask(name: str, backend: AcpBackend, prompt: str) -> None:
                answers[name] = text_of(await collect(backend, world.spec(prompt)))

            tg.start_soon(ask, "busy", first, "[[fake:slow:0.5]] busy")
            await anyio.to_thread.run_sync(world.api.wait_for_requests, 1)
            busy = pool.processes[0]
            tg.start_soon(ask, "other", other, "other")
        events = list(pool.events)
    assert answers["busy"] and answers["other"].endswith("other")
    assert ("retired", busy) in events  # evicted only once its prompt ended (the prompt above finished whole)
