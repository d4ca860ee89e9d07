"""A saved conversation survives `session/load` even when it was written in the same minute."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from gemini_relay.backends.gemini_cli.acp.session_files import protect_for_load, remove_load_leftovers
from gemini_relay.backends.gemini_cli.sessions import chats_files

SID = "11111111-2222-3333-4444-555555555555"


def saved(home: Path, name: str, *, turns: bool, sid: str = SID) -> Path:
    chats = home / ".gemini" / "tmp" / "proj" / "chats"
    chats.mkdir(parents=True, exist_ok=True)
    lines: list[dict[str, Any]] = [{"sessionId": sid, "startTime": "2026-12-01T09:05:43.223Z", "kind": "main"}]
    lines.append({"$set": {"messages": [{"type": "user", "content": [{"text": "<session_context>"}]}]}})
    if turns:
        lines.append({"type": "user", "content": [{"text": "first"}]})
        lines.append({"type": "gemini", "content": "answer"})
    path = chats / name
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def test_a_cli_named_file_is_renamed_to_a_name_the_cli_never_generates(tmp_path: Path) -> None:
    original = saved(tmp_path, "session-2026-12-01T09-05-11111111.jsonl", turns=True)
    kept = protect_for_load(tmp_path, SID)
    assert [p.name for p in kept] == ["session-2026-12-01T09-05-43-11111111.jsonl"]
    assert not original.exists() and kept[0].read_text(encoding="utf-8").count('"first"') == 1


def test_files_of_other_sessions_with_the_same_short_id_are_left_alone(tmp_path: Path) -> None:
    other = saved(tmp_path, "session-2026-12-01T09-05-11111111.jsonl", turns=True, sid="11111111-other")
    assert protect_for_load(tmp_path, SID) == []
    assert other.exists()


def test_the_empty_recording_a_load_leaves_is_removed_and_the_history_kept(tmp_path: Path) -> None:
    saved(tmp_path, "session-2026-12-01T09-05-11111111.jsonl", turns=True)
    kept = protect_for_load(tmp_path, SID)
    leftover = saved(tmp_path, "session-2026-12-01T09-06-11111111.jsonl", turns=False)
    remove_load_leftovers(tmp_path, SID, kept)
    assert not leftover.exists()
    assert chats_files(tmp_path, SID) == kept
