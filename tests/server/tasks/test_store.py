"""The task records on disk: only hex ids name a task (no path escapes), and the lock tells a live owner from a
dead one."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gemini_relay.server.tasks.store import TaskEntry, TaskStore


def test_a_task_round_trips_and_an_id_that_is_not_hex_names_nothing(tmp_path: Path) -> None:
    store = TaskStore(tmp_path)
    entry = TaskEntry("0123456789ab", "gemini-ask", {"prompt": "p"}, 1.0, 1.0, ["0123456789ab"])
    store.save(entry)
    assert store.load("0123456789ab") == entry
    assert store.ids() == ["0123456789ab"]
    for bad in ("../0123456789ab", "0123456789ab.json", "", "ZZZZZZZZZZ"):
        assert store.load(bad) is None and store.try_lock(bad) is None
    store.delete("0123456789ab")
    assert store.load("0123456789ab") is None and store.ids() == []


def test_a_held_lock_cannot_be_taken_and_a_released_one_can(tmp_path: Path) -> None:
    store = TaskStore(tmp_path)
    held = store.try_lock("abcdef012345")
    assert held is not None
    assert store.try_lock("abcdef012345") is None  # its server is alive
    os.close(held)  # the server went away
    again = store.try_lock("abcdef012345")
    assert again is not None
    os.close(again)


def test_a_record_from_an_older_writer_without_the_newer_fields_still_loads(tmp_path: Path) -> None:
    store = TaskStore(tmp_path)
    (store.root / "00000000aaaa.json").write_text('{"task_id": "00000000aaaa", "tool": "gemini-ask", "created_at": 5}')
    entry = store.load("00000000aaaa")
    assert entry is not None and entry.status == "working" and entry.jobs == [] and entry.updated_at == 5.0


def saved(tmp_path: Path) -> TaskStore:
    store = TaskStore(tmp_path)
    store.save(TaskEntry("0123456789ab", "gemini-ask", {"prompt": "p"}, 1.0, 1.0, ["0123456789ab"]))
    return store


def test_a_record_others_may_write_or_a_link_is_ignored(tmp_path: Path) -> None:
    store = saved(tmp_path)
    path = store.root / "0123456789ab.json"
    path.chmod(0o646)  # anyone could have chosen the tool and arguments this server would resume
    assert store.load("0123456789ab") is None
    path.chmod(0o600)
    planted = tmp_path / "planted.json"
    planted.write_bytes(path.read_bytes())
    path.unlink()
    path.symlink_to(planted)
    assert store.load("0123456789ab") is None


def test_a_record_of_another_user_is_ignored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = saved(tmp_path)
    owner = (store.root / "0123456789ab.json").stat().st_uid
    monkeypatch.setattr("os.getuid", lambda: owner + 1)
    assert store.load("0123456789ab") is None


@pytest.mark.parametrize(
    "body", ['{"task_id": "x"}', '{"task_id": "x", "tool": "t", "created_at": "soon"}', "[" * 50_000]
)
def test_a_corrupt_record_reads_as_absent(tmp_path: Path, body: str) -> None:
    store = saved(tmp_path)
    (store.root / "0123456789ab.json").write_text(body)
    assert store.load("0123456789ab") is None


def test_a_link_at_the_lock_name_is_never_followed(tmp_path: Path) -> None:
    store = TaskStore(tmp_path)
    target = tmp_path / "elsewhere"
    (store.root / "abcdef012345.lock").symlink_to(target)
    assert store.try_lock("abcdef012345") is None
    assert not target.exists()
