"""JobManager over a MemoryJobStore with an in-process spawner: create, follow, wait, collect, list, sweep and
idempotency, with no subprocess. The supervisor is the real one (jobs/supervisor.supervise) fed scripted backends."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import anyio
import anyio.abc
import pytest

from gemini_relay.core.events import AgentEvent, Finished, SessionStarted, TextDelta
from gemini_relay.core.spec import RunSpec
from gemini_relay.core.vocabulary import BackendName, FailureReason, RunState
from gemini_relay.errors import RunFailed
from gemini_relay.jobs.engine import RunEngine
from gemini_relay.jobs.locks import acquire_conversation_lock
from gemini_relay.jobs.manager import JobManager
from gemini_relay.jobs.memory_store import MemoryJobStore
from gemini_relay.jobs.runners import JobOptions
from gemini_relay.jobs.store import JobConflict
from gemini_relay.jobs.supervisor import supervise
from gemini_relay.supervise.liveness import describe

pytestmark = pytest.mark.anyio
BOUND = 5.0


class Gated:
    """A backend whose run names its conversation, streams two deltas, then waits for `release` before finishing."""

    name = BackendName.GEMINI
    command = "fake"
    max_concurrent = None

    def __init__(self) -> None:
        self.release = anyio.Event()
        self.runs = 0

    def check(self, spec: RunSpec) -> None:
        if spec.prompt == "refuse":
            raise RunFailed("never runs")

    async def run(self, spec: RunSpec) -> AsyncIterator[AgentEvent]:
        self.runs += 1
        yield SessionStarted("conv-1", "gemini-test")
        yield TextDelta("Hello ")
        await self.release.wait()
        yield TextDelta("world")
        yield Finished(ok=True, status="SUCCESS")


class InProcessSpawner:
    """Runs the real supervisor coroutine in the test's task group; locks are real flocks in a temp dir."""

    def __init__(self, store: MemoryJobStore, backend: Gated, tg: anyio.abc.TaskGroup, locks: Path) -> None:
        self._store, self._backend, self._tg, self._locks = store, backend, tg, locks
        self.started: list[str] = []

    def claim(self, job_id: str) -> int | None:
        return None if job_id in self.started else os.open(os.devnull, os.O_RDONLY)

    def lock_conversation(self, conversation_id: str) -> int:
        return acquire_conversation_lock(self._locks, conversation_id)

    def start(self, job_id: str, lock_fds: Sequence[int], claim_fd: int) -> _Child:
        self.started.append(job_id)
        self._store.write_supervisor(job_id, describe(os.getpid()))
        child = _Child()

        async def body() -> None:
            try:
                await supervise(self._store, job_id, (), {BackendName.GEMINI: self._backend}, signals=False)
            finally:
                child.code = 0

        self._tg.start_soon(body)
        return child


class _Child:
    code: int | None = None

    def poll(self) -> int | None:
        return self.code


def spec(prompt: str = "p", conversation: str | None = None) -> RunSpec:
    return RunSpec(tool="gemini-run", prompt=prompt, cwd=Path("/tmp"), conversation_id=conversation)


async def test_a_job_is_created_followed_and_collected_with_its_whole_answer(tmp_path: Path) -> None:
    store, backend = MemoryJobStore(), Gated()
    async with anyio.create_task_group() as tg:
        spawner = InProcessSpawner(store, backend, tg, tmp_path)
        manager = JobManager(store, spawner, kill_grace=1.0)
        engine = RunEngine({BackendName.GEMINI: backend}, max_concurrent=1, runners={BackendName.GEMINI: manager})
        record = engine.new_record(spec(), BackendName.GEMINI)
        assert manager.status(record.run_id).state is RunState.QUEUED
        outcome: list[str] = []

        async def run() -> None:
            outcome.append((await engine.execute(record)).text)

        tg.start_soon(run)
        with anyio.fail_after(BOUND):
            named = await manager.wait(record.run_id, BOUND, until=lambda s: s.conversation_id is not None)
            assert named.conversation_id == "conv-1" and not named.state.terminal
            tails: list[str] = []
            early = await manager.wait(record.run_id, 0.2, on_tail=tails.append)
            assert not early.state.terminal and tails[-1] == "Hello "  # bounded: the wait ended, the job did not
            backend.release.set()
            done = await manager.wait(record.run_id, BOUND)
    assert done.state is RunState.DONE and done.result == "Hello world"
    assert outcome == ["Hello world"]
    assert not store.collected(record.run_id)
    collected = await manager.collect(record.run_id)
    assert collected.state is RunState.DONE and store.collected(record.run_id)
    assert [s.job_id for s in manager.jobs()] == [record.run_id]
    assert manager.jobs(state="running") == []
    assert manager.sweep(ttl=0.0) == [record.run_id] and manager.jobs() == []


async def test_a_refused_request_creates_no_job(tmp_path: Path) -> None:
    store, backend = MemoryJobStore(), Gated()
    async with anyio.create_task_group() as tg:
        manager = JobManager(store, InProcessSpawner(store, backend, tg, tmp_path), kill_grace=1.0)
        engine = RunEngine({BackendName.GEMINI: backend}, max_concurrent=1, runners={BackendName.GEMINI: manager})
        with pytest.raises(RunFailed):
            engine.new_record(spec("refuse"), BackendName.GEMINI)
    assert store.job_ids() == []


async def test_the_same_idempotency_key_returns_the_same_job_and_another_request_is_refused(tmp_path: Path) -> None:
    store, backend = MemoryJobStore(), Gated()
    async with anyio.create_task_group() as tg:
        manager = JobManager(store, InProcessSpawner(store, backend, tg, tmp_path), kill_grace=1.0)
        engine = RunEngine({BackendName.GEMINI: backend}, max_concurrent=1, runners={BackendName.GEMINI: manager})
        first = engine.new_record(spec(), BackendName.GEMINI, JobOptions(idempotency_key="k"))
        again = engine.new_record(spec(), BackendName.GEMINI, JobOptions(idempotency_key="k"))
        assert again.reused_job and again.run_id == first.run_id
        with pytest.raises(JobConflict):
            engine.new_record(spec("other"), BackendName.GEMINI, JobOptions(idempotency_key="k"))
    assert store.job_ids() == [first.run_id]


async def test_a_busy_conversation_refuses_a_second_continuation_at_once(tmp_path: Path) -> None:
    store, backend = MemoryJobStore(), Gated()
    async with anyio.create_task_group() as tg:
        manager = JobManager(store, InProcessSpawner(store, backend, tg, tmp_path), kill_grace=1.0)
        engine = RunEngine({BackendName.GEMINI: backend}, max_concurrent=1, runners={BackendName.GEMINI: manager})
        engine.new_record(spec(conversation="conv-1"), BackendName.GEMINI)
        with pytest.raises(JobConflict, match="already has a run in flight"):
            engine.new_record(spec("again", conversation="conv-1"), BackendName.GEMINI)


class StillbornSpawner:
    """Starts a real supervisor stand-in that is killed at birth: it exits before recording itself."""

    def __init__(self, locks: Path) -> None:
        self._locks = locks
        self.started: list[str] = []

    def claim(self, job_id: str) -> int | None:
        return os.open(os.devnull, os.O_RDONLY)

    def lock_conversation(self, conversation_id: str) -> int:
        return acquire_conversation_lock(self._locks, conversation_id)

    def start(self, job_id: str, lock_fds: Sequence[int], claim_fd: int) -> subprocess.Popen[bytes]:
        self.started.append(job_id)
        return subprocess.Popen([sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"],
                                stdin=subprocess.DEVNULL, start_new_session=True)  # fmt: skip


async def test_a_supervisor_killed_before_it_records_itself_fails_the_job_as_interrupted(tmp_path: Path) -> None:
    store, backend = MemoryJobStore(), Gated()
    spawner = StillbornSpawner(tmp_path)
    manager = JobManager(store, spawner, kill_grace=1.0)
    engine = RunEngine({BackendName.GEMINI: backend}, max_concurrent=1, runners={BackendName.GEMINI: manager})
    record = engine.new_record(spec(conversation="conv-9"), BackendName.GEMINI)
    with anyio.fail_after(BOUND), pytest.raises(RunFailed) as failed:
        await engine.execute(record)
    assert failed.value.reason is FailureReason.INTERRUPTED and failed.value.retryable
    assert "supervisor exited before it started" in failed.value.message
    status = manager.status(record.run_id)
    assert status.state is RunState.FAILED and status.failure_reason is FailureReason.INTERRUPTED
    stored = store.result(record.run_id)
    assert stored is not None and stored.result.failure is not None  # the result is durable: any server sees it
    assert backend.runs == 0 and spawner.started == [record.run_id]
    os.close(acquire_conversation_lock(tmp_path, "conv-9"))  # the conversation is free again
