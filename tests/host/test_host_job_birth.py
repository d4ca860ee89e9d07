"""When a job is written: a fresh job without an idempotency key is written once its run is underway, so its prompt
goes out first (the files of a new job were ~2 ms of a warm later ask); one that must wait for a slot is written as
queued, with its environment, before it waits; one whose run says nothing yet is written as it stands once its
creator's reply has waited UNDERWAY_WAIT. Its creator hears of it only once it is written. The host runs inside the
test (GEMINI_RELAY_HOST=off, the same code as the shared host) with a scripted backend; the store is on disk."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from pathlib import Path

import anyio
import pytest

from gemini_relay.core.events import AgentEvent
from gemini_relay.core.spec import RunSpec
from gemini_relay.core.vocabulary import BackendName, RunState
from gemini_relay.errors import RunCancelled
from gemini_relay.relay_host.job_service import UNDERWAY_WAIT
from tests.host.test_host_records import executor
from tests.inmemory.scripted import Script, ScriptedBackend

pytestmark = pytest.mark.anyio
BOUND = 10.0
GEMINI = BackendName("gemini")


def spec(tmp_path: Path, prompt: str) -> RunSpec:
    return RunSpec(tool="gemini-run", prompt=prompt, cwd=tmp_path)


def job_dirs(tmp_path: Path) -> list[str]:
    """Every entry of the store's jobs folder, a job being built (hidden) included."""
    return sorted(p.name for p in (tmp_path / "state" / "jobs").iterdir())


async def test_a_fresh_jobs_prompt_goes_out_before_its_record_is_written_and_its_creator_hears_of_it_after(
    tmp_path: Path,
) -> None:
    backend = ScriptedBackend()
    seen_at_prompt: list[list[str]] = []
    backend.on_run = lambda _spec: seen_at_prompt.append(job_dirs(tmp_path))
    hold = anyio.Event()
    backend.queue(Script(deltas=("streaming",), hold=hold))
    async with executor(tmp_path, backend, GEMINI_API_KEY="a-secret") as deps, anyio.create_task_group() as tg:
        record = await deps.runs.register(spec(tmp_path, "a"), GEMINI)  # answered once the job is written
        job = tmp_path / "state" / "jobs" / record.run_id
        written = sorted(p.name for p in job.iterdir())
        assert deps.jobs is not None
        status = deps.jobs.status(record.run_id)
        tg.start_soon(deps.runs.execute, record)
        hold.set()
    assert seen_at_prompt == [[]]  # nothing of the job was on disk when its run began
    assert "meta.json" in written and "supervisor.json" in written and "progress.json" in written
    assert "env.json" not in written  # it starts at once: nothing adopts it, so its secrets never touch the disk
    assert status.state is RunState.RUNNING and status.conversation_id  # the first event is in its record


async def test_a_job_that_must_wait_for_a_slot_is_written_as_queued_with_its_environment_before_it_waits(
    tmp_path: Path,
) -> None:
    backend = ScriptedBackend()
    hold = anyio.Event()
    backend.queue(Script(deltas=("first",), hold=hold), Script(deltas=("second",)))
    one_slot = executor(tmp_path, backend, GEMINI_RELAY_MAX_CONCURRENT="1", GEMINI_API_KEY="a-secret")
    async with one_slot as deps, anyio.create_task_group() as tg:
        assert deps.jobs is not None
        first = await deps.runs.register(spec(tmp_path, "a"), GEMINI)
        tg.start_soon(deps.runs.execute, first)
        second = await deps.runs.register(spec(tmp_path, "b"), GEMINI)  # answered without waiting for the slot
        queued = deps.jobs.status(second.run_id)
        env_kept = (tmp_path / "state" / "jobs" / second.run_id / "env.json").is_file()
        hold.set()
        result = await deps.runs.execute(second)
    assert queued.state is RunState.QUEUED and env_kept  # adoptable, with its own environment, if the host dies
    assert result.text == "second"
    assert not (tmp_path / "state" / "jobs" / second.run_id / "env.json").exists()  # started: forgotten


class _SilentAtFirst(ScriptedBackend):
    """A backend whose run says nothing until `gate` is set (as a cold start says nothing for a second or more)."""

    def __init__(self, gate: anyio.Event) -> None:
        super().__init__()
        self.gate = gate

    async def run(self, spec: RunSpec) -> AsyncGenerator[AgentEvent, None]:
        with anyio.fail_after(BOUND):
            await self.gate.wait()
        async for event in super().run(spec):
            yield event


async def test_a_run_that_says_nothing_yet_is_written_as_started_once_its_creator_has_waited_and_can_be_cancelled(
    tmp_path: Path,
) -> None:
    gate = anyio.Event()
    backend = _SilentAtFirst(gate)
    async with executor(tmp_path, backend, GEMINI_API_KEY="a-secret") as deps:
        assert deps.jobs is not None
        with anyio.fail_after(UNDERWAY_WAIT + BOUND):
            record = await deps.runs.register(spec(tmp_path, "a"), GEMINI)
        starting = deps.jobs.status(record.run_id)
        written = sorted(p.name for p in (tmp_path / "state" / "jobs" / record.run_id).iterdir())
        async with anyio.create_task_group() as tg:

            async def stop() -> None:
                deps.runs.cancel(record.run_id, "stopped by the test")

            tg.start_soon(stop)
            with pytest.raises(RunCancelled):
                await deps.runs.execute(record)
        ended = await deps.jobs.wait(record.run_id, BOUND, until=lambda s: s.state.terminal)
    assert starting.state is RunState.STARTING  # its host supervises it; nothing will adopt it
    assert "supervisor.json" in written and "env.json" not in written
    assert ended.state is RunState.CANCELLED
