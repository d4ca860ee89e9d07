"""FileJobStore specifics beyond the shared conformance suite."""

from __future__ import annotations

import stat
import time
from pathlib import Path

from gemini_relay.core.spec import RunSpec
from gemini_relay.core.vocabulary import BackendName
from gemini_relay.jobs.fs_store import FileJobStore
from gemini_relay.jobs.store import JobMeta


def test_the_store_and_every_job_directory_are_private_to_the_owner(tmp_path: Path) -> None:
    store = FileJobStore(tmp_path / "state")
    store.create(
        JobMeta("j1", "gemini-ask", BackendName.GEMINI, RunSpec("gemini-ask", "secret", tmp_path), time.time())
    )
    for path in (store.root, store.jobs, store.keys, store.locks, store.dir("j1")):
        assert stat.S_IMODE(path.stat().st_mode) == 0o700, path


def test_recorded_files_accumulate_once_each_beside_a_files_list_in_the_result(tmp_path: Path) -> None:
    store = FileJobStore(tmp_path / "state")
    store.create(JobMeta("j1", "gemini-image", BackendName.AGY, RunSpec("gemini-image", "x", tmp_path), time.time()))
    assert store.files("j1") == []
    store.record_files("j1", ["/p/a.png"])
    store.record_files("j1", ["/p/a.png", "/p/b.mp4"])
    assert store.files("j1") == ["/p/a.png", "/p/b.mp4"]
    # A result that carries its own `files` (paths or {"path": ...}) is read too.
    (store.dir("j1") / "result.json").write_text('{"files": ["/p/c.wav", {"path": "/p/a.png"}, {"x": 1}, 7]}')
    assert store.files("j1") == ["/p/a.png", "/p/b.mp4", "/p/c.wav"]


def test_appended_text_with_a_lone_surrogate_is_kept_with_a_replacement_character(tmp_path: Path) -> None:
    store = FileJobStore(tmp_path / "state")
    store.create(JobMeta("j1", "gemini-ask", BackendName.GEMINI, RunSpec("gemini-ask", "p", tmp_path), time.time()))
    store.append_text("j1", "half \ud800 pair")
    store.append_text("j1", ", and the rest")
    assert store.text("j1") == "half \ufffd pair, and the rest"
