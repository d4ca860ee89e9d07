"""FileJobStore specifics beyond the shared conformance suite."""

from __future__ import annotations

import contextlib
import resource
import signal
import stat
import subprocess
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from gemini_relay.core.result import RunResult
from gemini_relay.core.spec import RunSpec
from gemini_relay.core.vocabulary import BackendName, RunState
from gemini_relay.jobs.store.file_store import FileJobStore
from gemini_relay.jobs.store.job_store import EXIT_DONE, JobMeta, JobNotFound, JobResult, StoreUnwritable


def test_the_store_and_every_job_directory_are_private_to_the_owner(tmp_path: Path) -> None:
    store = FileJobStore(tmp_path / "state")
    store.create(
        JobMeta("j1", "gemini-ask", BackendName("gemini"), RunSpec("gemini-ask", "secret", tmp_path), time.time())
    )
    for path in (store.root, store.jobs, store.keys, store.locks, store.dir("j1")):
        assert stat.S_IMODE(path.stat().st_mode) == 0o700, path


def test_recorded_files_accumulate_once_each_beside_a_files_list_in_the_result(tmp_path: Path) -> None:
    store = FileJobStore(tmp_path / "state")
    store.create(JobMeta("j1", "gemini-image", BackendName("agy"), RunSpec("gemini-image", "x", tmp_path), time.time()))
    assert store.files("j1") == []
    store.record_files("j1", ["/p/a.png"])
    store.record_files("j1", ["/p/a.png", "/p/b.mp4"])
    assert store.files("j1") == ["/p/a.png", "/p/b.mp4"]
    # A result that carries its own `files` (paths or {"path": ...}) is read too.
    (store.dir("j1") / "result.json").write_text('{"files": ["/p/c.wav", {"path": "/p/a.png"}, {"x": 1}, 7]}')
    assert store.files("j1") == ["/p/a.png", "/p/b.mp4", "/p/c.wav"]


def test_appended_text_with_a_lone_surrogate_is_kept_with_a_replacement_character(tmp_path: Path) -> None:
    store = FileJobStore(tmp_path / "state")
    store.create(JobMeta("j1", "gemini-ask", BackendName("gemini"), RunSpec("gemini-ask", "p", tmp_path), time.time()))
    store.append_text("j1", "half \ud800 pair")
    store.append_text("j1", ", and the rest")
    assert store.text("j1") == "half \ufffd pair, and the rest"


def _meta(tmp_path: Path, job_id: str = "j1") -> JobMeta:
    return JobMeta(job_id, "gemini-run", BackendName("gemini"), RunSpec("gemini-run", "p", tmp_path), time.time())


def test_a_failing_write_refuses_the_job_clearly_and_leaves_nothing_of_it(tmp_path: Path) -> None:
    store = FileJobStore(tmp_path / "state")
    # A real failing write: past RLIMIT_FSIZE the kernel answers EFBIG (SIGXFSZ ignored), like a full disk.
    previous = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (8, hard))
    try:
        with pytest.raises(StoreUnwritable) as refused:
            store.create(_meta(tmp_path))
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, previous)
    assert str(refused.value).startswith(f"the state dir {store.root} is not writable (File too large)")
    assert "GEMINI_RELAY_STATE_DIR" in str(refused.value)
    assert list(store.jobs.iterdir()) == [] and store.job_ids() == []
    store.create(_meta(tmp_path))  # once writes work again, the same job is created whole
    assert store.meta("j1").job_id == "j1"


@contextlib.contextmanager
def _tmpfs(path: Path) -> Iterator[None]:
    path.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(path)],
                      capture_output=True, check=False).returncode != 0:  # fmt: skip
        pytest.skip("mount -t tmpfs is not permitted here")
    try:
        yield
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


def test_a_read_only_state_dir_refuses_the_job_clearly_and_leaves_nothing_of_it(tmp_path: Path) -> None:
    root = tmp_path / "state"
    with _tmpfs(root):
        store = FileJobStore(root)
        subprocess.run(["mount", "-o", "remount,ro", str(root)], check=True)
        with pytest.raises(StoreUnwritable, match=r"is not writable \(Read-only file system\)"):
            store.create(_meta(tmp_path))
        assert list(store.jobs.iterdir()) == []


def test_a_job_being_built_is_not_listed(tmp_path: Path) -> None:
    store = FileJobStore(tmp_path / "state")
    (store.jobs / ".new-j2.1").mkdir()
    (store.jobs / ".new-j2.1" / "meta.json").write_text("{}")
    store.create(_meta(tmp_path))
    assert store.job_ids() == ["j1"]


def test_a_jobs_environment_is_kept_apart_from_its_meta_readable_by_the_owner_only_and_gone_once_it_ended(
    tmp_path: Path,
) -> None:
    store = FileJobStore(tmp_path)
    env = {"GEMINI_API_KEY": "secret-key", "GOOGLE_GEMINI_BASE_URL": "http://127.0.0.1:9"}
    store.create(replace(_meta(tmp_path), env=env))
    job_dir = store.dir("j1")
    assert "secret-key" not in (job_dir / "meta.json").read_text(encoding="utf-8")
    assert stat.S_IMODE((job_dir / "env.json").stat().st_mode) == 0o600
    assert store.meta("j1").env == env  # whoever adopts the job runs it with this
    store.write_result("j1", JobResult(RunResult(state=RunState.DONE, text="ok"), 1.0, 2.0, exit_code=EXIT_DONE))
    assert not (job_dir / "env.json").exists()
    assert store.meta("j1").env is None


def job_with_records(tmp_path: Path) -> FileJobStore:
    store = FileJobStore(tmp_path / "state")
    store.create(JobMeta("j1", "gemini-ask", BackendName("gemini"), RunSpec("gemini-ask", "p", tmp_path), time.time()))
    store.record_files("j1", ["/p/a.png"])
    return store


def test_a_record_others_may_write_or_a_link_is_ignored_as_if_absent(tmp_path: Path) -> None:
    store = job_with_records(tmp_path)
    files = store.dir("j1") / "files.json"
    files.chmod(0o666)  # anyone could have put these paths there
    assert store.files("j1") == []
    files.chmod(0o664)  # a umask of 002 writes records like this: still the owner's alone to change
    assert store.files("j1") == ["/p/a.png"]
    meta = store.dir("j1") / "meta.json"
    elsewhere = tmp_path / "planted.json"
    elsewhere.write_bytes(meta.read_bytes())
    meta.unlink()
    meta.symlink_to(elsewhere)  # a job's meta is what its supervisor runs: never read through a link
    with pytest.raises(JobNotFound):
        store.meta("j1")


def test_a_record_of_another_user_is_ignored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = job_with_records(tmp_path)
    owner = (store.dir("j1") / "meta.json").stat().st_uid
    monkeypatch.setattr("os.getuid", lambda: owner + 1)
    with pytest.raises(JobNotFound):
        store.meta("j1")
    assert store.files("j1") == []


@pytest.mark.parametrize("body", ['{"job_id": "j1"}', '{"spec": 7}', "[" * 50_000, '"a string"'])
def test_a_corrupt_meta_reads_as_a_missing_job(tmp_path: Path, body: str) -> None:
    store = job_with_records(tmp_path)
    (store.dir("j1") / "meta.json").write_text(body)
    with pytest.raises(JobNotFound):
        store.meta("j1")


def test_a_corrupt_progress_or_supervisor_record_reads_as_absent(tmp_path: Path) -> None:
    store = job_with_records(tmp_path)
    (store.dir("j1") / "progress.json").write_text('{"state": "no such state"}')
    (store.dir("j1") / "supervisor.json").write_text('{"pid": "x"}')
    assert store.progress("j1") is None and store.supervisor("j1") is None
