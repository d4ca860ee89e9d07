"""The task records on disk: only hex ids name a task (no path escapes), and the lock tells a live owner from a
dead one."""

from __future__ import annotations

import os
from pathlib import Path

from gemini_relay.tools.task_store import TaskEntry, TaskStore


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
