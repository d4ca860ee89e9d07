"""What a run in the host writes, when the state dir refuses it: a job whose record cannot be written (its directory
removed while it runs, a full disk) fails alone, with its text so far returned to its caller and a classified,
retryable failure; the host and every other run go on. The host runs inside the test (GEMINI_RELAY_HOST=off, the
same code as the shared host) with a scripted backend; the store is on disk."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest

from gemini_relay.app import build_deps
from gemini_relay.config import Settings
from gemini_relay.core.result import RunResult
from gemini_relay.core.spec import RunSpec
from gemini_relay.core.vocabulary import BackendName, FailureReason, RunState
from gemini_relay.errors import RunFailed
from gemini_relay.jobs.engine.record import RunRecord
from gemini_relay.jobs.store.job_status import JobStatus
from gemini_relay.tools.common.context import Deps
from tests.inmemory.scripted import Script, ScriptedBackend, held_backend
from tests.jobs.full_disk import full_disk

pytestmark = pytest.mark.anyio
BOUND = 10.0
GEMINI = BackendName("gemini")


@asynccontextmanager
async def executor(tmp_path: Path, backend: ScriptedBackend, **more: str) -> AsyncIterator[Deps]:
    """The host's executor in this process over `backend`; `more`: further settings (GEMINI_RELAY_…)."""
    env = {"HOME": str(tmp_path), "PATH": str(tmp_path), "GEMINI_RELAY_STATE_DIR": str(tmp_path / "state"),
           "GEMINI_RELAY_HOST": "off", "GEMINI_MCP_BACKEND": "gemini", "GEMINI_RELAY_MAX_CONCURRENT": "2",
           "GEMINI_RELAY_MIN_GAP_MS": "0", "GEMINI_RELAY_JITTER_MS": "0", **more}  # fmt: skip
    deps = build_deps(Settings.from_env(env, cwd=tmp_path), backends={GEMINI: backend})
    with anyio.fail_after(BOUND):
        async with deps.serving():
            yield deps


def spec(tmp_path: Path, prompt: str) -> RunSpec:
    return RunSpec(tool="gemini-run", prompt=prompt, cwd=tmp_path)


async def outcome_of(deps: Deps, record: RunRecord) -> RunResult | RunFailed:
    try:
        return await deps.runs.execute(record)
    except RunFailed as exc:
        return exc


async def until(deps: Deps, job_id: str, holds: Callable[[JobStatus], bool]) -> JobStatus:
    assert deps.jobs is not None
    return await deps.jobs.wait(job_id, BOUND, until=holds)


async def test_a_job_whose_directory_is_removed_mid_run_fails_alone_and_the_host_and_other_runs_go_on(
    tmp_path: Path,
) -> None:
    hold_a, hold_b = anyio.Event(), anyio.Event()
    backend = ScriptedBackend()
    backend.queue(Script(deltas=("before ",), hold=hold_a, after_hold=("after",)), Script(deltas=("b",), hold=hold_b))
    outcomes: dict[str, RunResult | RunFailed] = {}
    async with executor(tmp_path, backend) as deps:
        assert deps.jobs is not None
        a = await deps.runs.register(spec(tmp_path, "a"), GEMINI)
        b = await deps.runs.register(spec(tmp_path, "b"), GEMINI)
        async with anyio.create_task_group() as tg:
            for record in (a, b):
                tg.start_soon(_keep, outcomes, record, deps)
            store = deps.jobs.store
            await until(deps, a.run_id, lambda s: s.state is RunState.RUNNING and "before" in store.text(a.run_id))
            await until(deps, b.run_id, lambda s: s.state is RunState.RUNNING)
            shutil.rmtree(tmp_path / "state" / "jobs" / a.run_id)  # both runs are in the host's engine
            hold_a.set()
            with anyio.fail_after(BOUND):
                while a.run_id not in outcomes:
                    await anyio.sleep(0.01)
            hold_b.set()
        c = await deps.runs.register(spec(tmp_path, "c"), GEMINI)  # the host still takes runs
        done_c = await deps.runs.execute(c)
    failed = outcomes[a.run_id]
    assert isinstance(failed, RunFailed) and failed.reason is FailureReason.STORE_UNWRITABLE
    assert failed.partial_text == "before after" and failed.retryable is True
    assert (
        "removed from the state dir" in failed.message
        and failed.recovery
        and "GEMINI_RELAY_STATE_DIR" in failed.recovery
    )
    done_b = outcomes[b.run_id]
    assert isinstance(done_b, RunResult) and done_b.state is RunState.DONE and done_b.text == "b"
    assert done_c.text == "Scripted answer to: c"


async def _keep(outcomes: dict[str, RunResult | RunFailed], record: RunRecord, deps: Deps) -> None:
    outcomes[record.run_id] = await outcome_of(deps, record)


async def test_a_full_disk_fails_the_run_with_its_partial_text_and_its_result_is_recorded_once_there_is_room(
    tmp_path: Path,
) -> None:
    hold = anyio.Event()
    backend = ScriptedBackend()
    backend.queue(Script(deltas=("kept ",), hold=hold, after_hold=("in memory",)))
    async with executor(tmp_path, backend) as deps:
        assert deps.jobs is not None
        record = await deps.runs.register(spec(tmp_path, "a"), GEMINI)
        async with anyio.create_task_group() as tg:
            outcomes: dict[str, RunResult | RunFailed] = {}
            tg.start_soon(_keep, outcomes, record, deps)
            await until(deps, record.run_id, lambda s: s.state is RunState.RUNNING)
            with full_disk():
                hold.set()
                with anyio.fail_after(BOUND):
                    while record.run_id not in outcomes:
                        await anyio.sleep(0.01)
                running = deps.jobs.status(record.run_id)
        status = await until(deps, record.run_id, lambda s: s.state.terminal)  # written by the host's retry
        again = await deps.runs.execute(await deps.runs.register(spec(tmp_path, "next"), GEMINI))
    failed = outcomes[record.run_id]
    assert isinstance(failed, RunFailed) and failed.reason is FailureReason.STORE_UNWRITABLE
    assert failed.partial_text == "kept in memory" and failed.retryable is True
    assert "File too large" in failed.message
    assert running.state is RunState.RUNNING  # nothing could be written meanwhile
    assert status.state is RunState.FAILED and status.failure_reason is FailureReason.STORE_UNWRITABLE
    assert status.text == "kept in memory"
    assert again.text == "Scripted answer to: next"


async def test_a_started_job_keeps_no_environment_on_disk_so_a_host_killed_mid_run_leaves_none(
    tmp_path: Path,
) -> None:
    backend, hold = held_backend("running")
    async with executor(tmp_path, backend) as deps, anyio.create_task_group() as tg:
        assert deps.jobs is not None
        record = await deps.runs.register(spec(tmp_path, "a"), GEMINI)
        env = tmp_path / "state" / "jobs" / record.run_id / "env.json"
        tg.start_soon(deps.runs.execute, record)
        await until(deps, record.run_id, lambda s: s.state is RunState.RUNNING)
        running_env = env.exists()
        hold.set()
    assert not running_env  # adopting is for queued jobs only: a started one never needs it again
