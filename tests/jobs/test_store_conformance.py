"""Every JobStore implementation against the store contract, plus what only the file store must also promise."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gemini_relay.core.vocabulary import FailureReason, RunState
from gemini_relay.jobs.store.file_store import EXIT_CODE, META, RESULT, FileJobStore
from gemini_relay.jobs.store.job_store import JobMeta, JobNotFound, JobResult, JobStore, Progress
from gemini_relay.jobs.store.memory import MemoryJobStore
from gemini_relay.supervise.liveness import ProcessInfo
from tests.jobs.store_conformance import IdempotencyContract, StoreContract, full_meta, full_result


@pytest.fixture(params=["file", "memory"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> JobStore:
    if request.param == "file":
        return FileJobStore(tmp_path / "state")
    return MemoryJobStore()


class TestEveryStoreKeepsTheJobContract(StoreContract):
    pass


class TestEveryStoreKeepsTheIdempotencyContract(IdempotencyContract):
    pass


def test_an_unknown_failure_reason_reads_as_unknown_and_unknown_fields_are_ignored() -> None:
    data = {**full_result(RunState.FAILED).to_json(), "failure_reason": "solar_flare", "added_later": 1}
    result = JobResult.from_json(data)
    assert result.result.failure is not None and result.result.failure.reason is FailureReason.UNKNOWN
    assert result.result.text == full_result().result.text


def test_results_and_metas_survive_their_json_form() -> None:
    for state in (RunState.DONE, RunState.FAILED, RunState.CANCELLED):
        assert JobResult.from_json(json.loads(json.dumps(full_result(state).to_json()))) == full_result(state)
    meta = full_meta(key="k")
    assert JobMeta.from_json(json.loads(json.dumps(meta.to_json()))) == meta


# What only the durable store promises: atomic records, the sentinel, and several processes sharing one root.


@pytest.fixture
def files(tmp_path: Path) -> FileJobStore:
    return FileJobStore(tmp_path / "state")


def _every_file(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file()]


def test_a_full_job_life_leaves_no_temporary_files(files: FileJobStore) -> None:
    store = files
    store.create(full_meta(key="key"))
    store.bind_idempotency("key", "job-1", "hash-1")
    store.write_supervisor("job-1", ProcessInfo(pid=1, start_ticks=2, boot_id="b"))
    for n in range(5):
        store.write_progress("job-1", Progress(state=RunState.RUNNING, updated_at=float(n)))
        store.append_text("job-1", f"piece {n} ")
    store.request_cancel("job-1")
    store.write_result("job-1", full_result())
    store.mark_collected("job-1")
    leftovers = [p for p in _every_file(store.root) if p.name.endswith(".tmp")]
    assert leftovers == []


def test_a_torn_result_without_its_sentinel_is_not_a_result(files: FileJobStore) -> None:
    files.create(full_meta())
    (files.dir("job-1") / RESULT).write_bytes(b'{"state": "done", "text": "The whole ans')
    assert files.result("job-1") is None
    assert files.finished_at("job-1") is None


def test_a_whole_result_written_before_its_sentinel_is_not_yet_a_result(files: FileJobStore) -> None:
    files.create(full_meta())
    (files.dir("job-1") / RESULT).write_bytes(json.dumps(full_result().to_json()).encode())
    assert files.result("job-1") is None
    (files.dir("job-1") / EXIT_CODE).write_text("0\n", encoding="ascii")
    assert files.result("job-1") == full_result()


def test_a_garbage_result_behind_a_sentinel_reads_as_no_result_rather_than_an_error(files: FileJobStore) -> None:
    files.create(full_meta())
    (files.dir("job-1") / RESULT).write_bytes(b"\x00\xffnot json")
    (files.dir("job-1") / EXIT_CODE).write_text("0\n", encoding="ascii")
    assert files.result("job-1") is None


def test_the_sentinel_holds_the_results_exit_code(files: FileJobStore) -> None:
    files.create(full_meta())
    files.write_result("job-1", full_result(RunState.FAILED))
    assert (files.dir("job-1") / EXIT_CODE).read_text(encoding="ascii") == "1\n"


def test_an_unknown_failure_reason_on_disk_reads_as_unknown(files: FileJobStore) -> None:
    files.create(full_meta())
    data = {**full_result(RunState.FAILED).to_json(), "failure_reason": "written_by_a_newer_version"}
    (files.dir("job-1") / RESULT).write_bytes(json.dumps(data).encode())
    (files.dir("job-1") / EXIT_CODE).write_text("1\n", encoding="ascii")
    result = files.result("job-1")
    assert result is not None and result.result.failure is not None
    assert result.result.failure.reason is FailureReason.UNKNOWN


def test_a_job_directory_without_its_meta_is_not_a_job(files: FileJobStore) -> None:
    (files.jobs / "half-made").mkdir()
    (files.jobs / "half-made" / f".{META}.999.tmp").write_bytes(b'{"job_id": "half-m')
    assert files.job_ids() == []
    with pytest.raises(JobNotFound):
        files.meta("half-made")


def test_an_unreadable_meta_is_not_found(files: FileJobStore) -> None:
    files.create(full_meta())
    (files.dir("job-1") / META).write_bytes(b"{torn")
    with pytest.raises(JobNotFound):
        files.meta("job-1")


def test_a_second_store_on_the_same_root_sees_every_record(tmp_path: Path) -> None:
    writer, reader = FileJobStore(tmp_path / "state"), FileJobStore(tmp_path / "state")
    writer.create(full_meta(key="key"))
    writer.bind_idempotency("key", "job-1", "hash-1")
    writer.write_supervisor("job-1", ProcessInfo(pid=1, start_ticks=2))
    writer.append_text("job-1", "streamed")
    writer.write_result("job-1", full_result())
    assert reader.meta("job-1") == full_meta(key="key")
    assert reader.supervisor("job-1") == ProcessInfo(pid=1, start_ticks=2)
    assert reader.text("job-1") == "streamed"
    assert reader.result("job-1") == full_result()
    assert reader.bind_idempotency("key", "other", "hash-1") == "job-1"
