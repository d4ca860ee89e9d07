"""derive_status: every row of the table, read from the store's records (both stores), with real processes.

A "live supervisor" is this test process itself (`describe(os.getpid())`); a dead one is a child that has exited
and been reaped; a recycled pid is this process's pid recorded with another start time.
"""

from __future__ import annotations

import os
from dataclasses import asdict, replace
from pathlib import Path

import pytest

from gemini_relay.core.vocabulary import FailureReason, RunState
from gemini_relay.jobs.store.file_store import FileJobStore
from gemini_relay.jobs.store.job_status import INTERRUPTED, INTERRUPTED_RECOVERY, derive_status
from gemini_relay.jobs.store.job_store import JobNotFound, JobStore, Progress
from gemini_relay.jobs.store.memory import MemoryJobStore
from gemini_relay.supervise.liveness import ProcessInfo, describe
from tests.jobs.store_conformance import full_meta, full_result
from tests.supervise.test_liveness import gone_process

CREATED = full_meta().created_at
SESSION = full_meta().spec.session_id


@pytest.fixture(params=["file", "memory"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> JobStore:
    store: JobStore = FileJobStore(tmp_path / "state") if request.param == "file" else MemoryJobStore()
    store.create(full_meta())
    return store


def me() -> ProcessInfo:
    return describe(os.getpid())


def recycled() -> ProcessInfo:
    """This process's pid, as if recorded for an earlier process that had it: same pid, another start time."""
    info = me()
    assert info.start_ticks is not None
    return replace(info, start_ticks=info.start_ticks - 1)


def test_a_job_without_a_supervisor_is_queued(store: JobStore) -> None:
    status = derive_status(store, "job-1", now=CREATED + 3)
    assert status.state is RunState.QUEUED
    assert status.elapsed == 3.0
    assert status.conversation_id == SESSION and status.model == "gemini-2.5-pro"
    assert (status.outcome, status.failure_reason, status.orphan_cli) == (None, None, None)
    assert "partial" not in status.to_json()


def test_a_job_queued_a_moment_in_the_future_never_shows_a_negative_elapsed(store: JobStore) -> None:
    assert derive_status(store, "job-1", now=CREATED - 5).elapsed == 0.0


def test_a_live_supervisor_that_reported_nothing_yet_is_starting(store: JobStore) -> None:
    store.write_supervisor("job-1", me())
    assert derive_status(store, "job-1").state is RunState.STARTING


def test_a_live_supervisor_reports_its_progress_state_conversation_and_model(store: JobStore) -> None:
    store.write_supervisor("job-1", me())
    progress = Progress(
        state=RunState.RUNNING, session_id="sess-live", model="gemini-2.5-flash", started_at=CREATED + 10
    )
    store.write_progress("job-1", progress)
    store.append_text("job-1", "streaming...")
    status = derive_status(store, "job-1", now=CREATED + 12.5)
    assert status.state is RunState.RUNNING
    assert (status.conversation_id, status.model) == ("sess-live", "gemini-2.5-flash")
    assert status.elapsed == 2.5
    assert status.outcome is None and status.text == ""  # streamed text is not a result while the run goes on
    assert status.to_json()["elapsed"] == "2.5s"


def test_a_live_supervisor_still_starting_keeps_the_specs_conversation(store: JobStore) -> None:
    store.write_supervisor("job-1", me())
    store.write_progress("job-1", Progress(state=RunState.STARTING))
    status = derive_status(store, "job-1")
    assert status.state is RunState.STARTING and status.conversation_id == SESSION


def test_a_dead_supervisor_without_a_result_is_failed_interrupted_with_its_streamed_text(store: JobStore) -> None:
    store.write_supervisor("job-1", gone_process())
    store.write_progress("job-1", Progress(state=RunState.RUNNING, session_id="sess-dead"))
    store.append_text("job-1", "Partial answer before the crash")
    status = derive_status(store, "job-1")
    assert status.state is RunState.FAILED
    assert status.failure_reason is FailureReason.INTERRUPTED
    assert status.outcome is not None and status.failure is not None
    assert status.failure.message == INTERRUPTED
    assert status.outcome.partial is True
    assert status.text == "Partial answer before the crash"
    assert status.conversation_id == "sess-dead" == status.outcome.conversation_id
    assert status.failure.recovery is None  # the text is there to read; nothing to suggest
    data = status.to_json()
    assert data["failure_reason"] == "interrupted" and data["partial"] is True


def test_a_dead_supervisor_that_streamed_nothing_suggests_continuing_its_conversation(store: JobStore) -> None:
    store.write_supervisor("job-1", gone_process())
    status = derive_status(store, "job-1")
    assert status.state is RunState.FAILED and status.failure_reason is FailureReason.INTERRUPTED
    assert status.text == "" and "result" not in status.to_json()
    assert status.conversation_id == SESSION
    assert status.failure is not None and status.failure.recovery == INTERRUPTED_RECOVERY


def test_an_interrupted_job_without_any_conversation_id_suggests_nothing() -> None:
    store = MemoryJobStore()
    meta = full_meta()
    store.create(replace(meta, spec=replace(meta.spec, session_id=None, conversation_id=None)))
    store.write_supervisor("job-1", gone_process())
    status = derive_status(store, "job-1")
    assert status.failure_reason is FailureReason.INTERRUPTED
    assert status.failure is not None and status.failure.recovery is None


def test_a_recycled_pid_with_another_start_time_is_not_the_supervisor(store: JobStore) -> None:
    store.write_supervisor("job-1", recycled())
    store.append_text("job-1", "text so far")
    status = derive_status(store, "job-1")
    assert status.state is RunState.FAILED and status.failure_reason is FailureReason.INTERRUPTED
    assert status.text == "text so far"


def test_the_supervisors_pid_in_another_boot_is_not_the_supervisor(store: JobStore) -> None:
    store.write_supervisor("job-1", replace(me(), boot_id="a-boot-before-the-reboot"))
    assert derive_status(store, "job-1").failure_reason is FailureReason.INTERRUPTED


def test_an_interrupted_job_names_the_cli_its_dead_supervisor_left_behind(store: JobStore) -> None:
    store.write_supervisor("job-1", gone_process())
    store.write_progress("job-1", Progress(state=RunState.RUNNING, cli_pid=4321, cli_start_ticks=8765))
    status = derive_status(store, "job-1")
    assert status.orphan_cli == (4321, 8765)
    assert "orphan_cli" not in status.to_json()


def test_a_running_job_reports_no_orphan_cli(store: JobStore) -> None:
    store.write_supervisor("job-1", me())
    store.write_progress("job-1", Progress(state=RunState.RUNNING, cli_pid=4321, cli_start_ticks=8765))
    assert derive_status(store, "job-1").orphan_cli is None


def test_an_interrupted_job_whose_cli_never_started_reports_no_orphan_cli(store: JobStore) -> None:
    store.write_supervisor("job-1", gone_process())
    store.write_progress("job-1", Progress(state=RunState.STARTING))
    assert derive_status(store, "job-1").orphan_cli is None


def test_a_done_result_is_reported_as_written(store: JobStore) -> None:
    store.write_supervisor("job-1", gone_process())  # the supervisor exits right after writing its result
    store.append_text("job-1", "streamed text is not the result")
    result = full_result(RunState.DONE)
    store.write_result("job-1", result)
    status = derive_status(store, "job-1")
    assert status.state is RunState.DONE
    assert status.outcome == result.result  # the run's own value, not a copy of its fields
    assert (status.failure_reason, status.failure) == (None, None)
    assert (status.conversation_id, status.model) == (result.result.conversation_id, result.result.model)
    data = status.to_json()
    assert data["result"] == result.result.text
    usage = result.result.usage
    assert (data.get("usage"), data.get("turns"), tuple(data.get("notices") or ())) == (
        ({**asdict(usage), "cache_read_tokens": usage.cached_tokens} if usage else None),
        result.result.num_turns,
        result.result.notices,
    )
    assert data["structured_output"] == result.result.structured_output
    assert status.elapsed == pytest.approx(result.ended_at - (result.started_at or 0.0))
    assert status.orphan_cli is None
    assert status.to_json()["partial"] is False


def test_a_finished_job_also_names_its_turns_and_cache_reads_as_agy_mcp_does(store: JobStore) -> None:
    result = full_result(RunState.DONE)
    assert result.result.usage is not None and result.result.num_turns
    store.write_result("job-1", result)
    data = derive_status(store, "job-1").to_json()
    assert data["num_turns"] == data["turns"] == result.result.num_turns
    assert data["usage"]["cache_read_tokens"] == data["usage"]["cached_tokens"] == result.result.usage.cached_tokens


def test_a_result_wins_over_a_supervisor_that_still_runs(store: JobStore) -> None:
    store.write_supervisor("job-1", me())
    store.write_progress("job-1", Progress(state=RunState.RUNNING))
    store.write_result("job-1", full_result(RunState.DONE))
    assert derive_status(store, "job-1").state is RunState.DONE


def test_a_failed_result_keeps_its_reason_error_and_recovery(store: JobStore) -> None:
    result = full_result(RunState.FAILED)
    failure = result.result.failure
    assert failure is not None
    store.write_result("job-1", result)
    status = derive_status(store, "job-1")
    assert status.state is RunState.FAILED
    assert status.failure_reason is FailureReason.TIMEOUT
    assert status.failure == failure
    data = status.to_json()
    assert (data["error"], data["recovery"], data["retryable"], data["error_id"]) == (
        failure.message,
        failure.recovery,
        failure.retryable,
        failure.error_id,
    )
    assert data["partial"] is True and data["result"] == result.result.text


def test_a_cancelled_result_carries_no_failure_reason(store: JobStore) -> None:
    store.write_result("job-1", full_result(RunState.CANCELLED))
    status = derive_status(store, "job-1")
    assert status.state is RunState.CANCELLED and status.failure_reason is None


def test_a_result_without_text_reports_no_result_text(store: JobStore) -> None:
    store.write_result("job-1", replace(full_result(), result=replace(full_result().result, text="")))
    status = derive_status(store, "job-1")
    assert status.text == "" and "result" not in status.to_json()


def test_a_result_without_a_start_time_counts_elapsed_from_creation(store: JobStore) -> None:
    store.write_result("job-1", replace(full_result(), started_at=None, ended_at=CREATED + 7))
    assert derive_status(store, "job-1").elapsed == 7.0


def test_an_unknown_job_is_not_found(store: JobStore) -> None:
    with pytest.raises(JobNotFound):
        derive_status(store, "no-such-job")
