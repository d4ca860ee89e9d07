"""list_conversations over a `.gemini/tmp/<slug>/chats/session-*.jsonl` tree shaped like gemini-cli.md §9."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from gemini_relay.backends.capabilities import Conversation
from gemini_relay.backends.gemini_cli.sessions import FIRST_PROMPT_CHARS, list_conversations

SESSION_CONTEXT = "<session_context>\nWorkspace directories:\n  /work/proj\n</session_context>"


def write_session(
    home: Path,
    slug: str,
    session_id: str,
    *,
    prompt: str = "explain the build",
    mtime: float,
    start: str = "2026-11-30T08:00:00.000Z",
    records: list[dict[str, Any]] | None = None,
    project_root: str | None = None,
) -> Path:
    project = home / ".gemini" / "tmp" / slug
    chats = project / "chats"
    chats.mkdir(parents=True, exist_ok=True)
    (project / ".project_root").write_text((project_root or f"/work/{slug}") + "\n", encoding="utf-8")
    header = {
        "sessionId": session_id,
        "projectHash": "ab" * 32,
        "startTime": start,
        "lastUpdated": start,
        "kind": "main",
    }
    if records is None:
        records = [
            {
                "id": "m1",
                "timestamp": start,
                "type": "user",
                "content": [{"text": SESSION_CONTEXT}, {"text": prompt}],
            },
            {"$set": {"lastUpdated": "2026-11-30T08:00:05.000Z"}},
            {"id": "m2", "type": "gemini", "content": "an answer", "thoughts": [], "toolCalls": []},
            {"$set": {"lastUpdated": "2026-11-30T08:00:09.000Z", "summary": "s"}},
        ]
    path = chats / f"session-2026-11-30T08-00-{session_id[:8]}.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in [header, *records]), encoding="utf-8")
    os.utime(path, (mtime, mtime))
    return path


def test_no_gemini_home_means_no_conversations(tmp_path: Path) -> None:
    assert list_conversations(tmp_path, 20) == []
    (tmp_path / ".gemini" / "tmp").mkdir(parents=True)
    assert list_conversations(tmp_path, 20) == []


def test_a_session_becomes_a_conversation_with_its_project_and_first_prompt(tmp_path: Path) -> None:
    write_session(tmp_path, "proj-a", "aaecb6d9-2899-4567-b93c-7386039cb1ef", mtime=1000)
    assert list_conversations(tmp_path, 20) == [
        Conversation(
            id="aaecb6d9-2899-4567-b93c-7386039cb1ef",
            last_active="2026-11-30T08:00:09.000Z",
            cwd="/work/proj-a",
            first_prompt="explain the build",
        )
    ]


def test_conversations_are_newest_first_across_projects(tmp_path: Path) -> None:
    write_session(tmp_path, "proj-a", "11111111-0000-0000-0000-000000000000", mtime=1000)
    write_session(tmp_path, "proj-b", "22222222-0000-0000-0000-000000000000", mtime=3000)
    write_session(tmp_path, "proj-a", "33333333-0000-0000-0000-000000000000", mtime=2000)
    assert [c.id[:8] for c in list_conversations(tmp_path, 20)] == ["22222222", "33333333", "11111111"]


def test_the_limit_keeps_only_the_newest(tmp_path: Path) -> None:
    for i in range(5):
        write_session(tmp_path, "proj", f"{i:08d}-0000-0000-0000-000000000000", mtime=1000 + i)
    assert [c.id[:8] for c in list_conversations(tmp_path, 2)] == ["00000004", "00000003"]


def test_torn_garbage_and_empty_files_are_skipped_and_do_not_use_up_the_limit(tmp_path: Path) -> None:
    write_session(tmp_path, "proj", "aaaaaaaa-0000-0000-0000-000000000000", mtime=1000)
    chats = tmp_path / ".gemini" / "tmp" / "proj" / "chats"
    bad = {
        "session-torn.jsonl": '{"sessionId": "bbbb',
        "session-garbage.jsonl": "\x00\xff not json at all\n",
        "session-empty.jsonl": "",
        "session-array.jsonl": '["sessionId"]\n',
        "session-no-id.jsonl": '{"startTime": "2026-11-30T08:00:00Z"}\n',
        "session-number-id.jsonl": '{"sessionId": 12}\n',
    }
    for i, (name, text) in enumerate(bad.items()):
        (chats / name).write_text(text, encoding="utf-8", errors="surrogateescape")
        os.utime(chats / name, (2000 + i, 2000 + i))
    assert [c.id[:8] for c in list_conversations(tmp_path, 1)] == ["aaaaaaaa"]


def test_a_torn_last_line_does_not_lose_the_session(tmp_path: Path) -> None:
    path = write_session(tmp_path, "proj", "aaaaaaaa-0000-0000-0000-000000000000", mtime=1000)
    with path.open("a", encoding="utf-8") as handle:
        handle.write('{"$set": {"lastUpdated": "2026-12')
    (conversation,) = list_conversations(tmp_path, 5)
    assert conversation.last_active == "2026-11-30T08:00:09.000Z"


def test_files_that_are_not_session_files_are_ignored(tmp_path: Path) -> None:
    write_session(tmp_path, "proj", "aaaaaaaa-0000-0000-0000-000000000000", mtime=1000)
    chats = tmp_path / ".gemini" / "tmp" / "proj" / "chats"
    (chats / "notes.jsonl").write_text('{"sessionId": "zzzzzzzz"}\n', encoding="utf-8")
    (chats / "session-x.json").write_text('{"sessionId": "yyyyyyyy"}\n', encoding="utf-8")
    logs = tmp_path / ".gemini" / "tmp" / "proj" / "logs"
    logs.mkdir()
    (logs / "session-1.jsonl").write_text('{"sessionId": "xxxxxxxx"}\n', encoding="utf-8")
    assert [c.id[:8] for c in list_conversations(tmp_path, 10)] == ["aaaaaaaa"]


def test_the_session_context_part_is_not_the_first_prompt(tmp_path: Path) -> None:
    write_session(tmp_path, "proj", "aaaaaaaa-0000-0000-0000-000000000000", prompt="the real question", mtime=1)
    (conversation,) = list_conversations(tmp_path, 5)
    assert conversation.first_prompt == "the real question"
    assert "session_context" not in conversation.first_prompt


def test_the_first_prompt_is_the_first_user_message_only(tmp_path: Path) -> None:
    records: list[dict[str, Any]] = [
        {"type": "gemini", "content": "a greeting before any prompt"},
        {"type": "user", "content": [{"text": SESSION_CONTEXT}, {"text": "first"}, {"text": "second part"}]},
        {"type": "user", "content": [{"text": "a later turn"}]},
    ]
    write_session(tmp_path, "proj", "aaaaaaaa-0000-0000-0000-000000000000", records=records, mtime=1)
    (conversation,) = list_conversations(tmp_path, 5)
    assert conversation.first_prompt == "first second part"


def test_a_plain_string_user_content_is_the_prompt(tmp_path: Path) -> None:
    records: list[dict[str, Any]] = [{"type": "user", "content": "just text"}]
    write_session(tmp_path, "proj", "aaaaaaaa-0000-0000-0000-000000000000", records=records, mtime=1)
    assert list_conversations(tmp_path, 5)[0].first_prompt == "just text"


def test_a_long_or_multiline_first_prompt_is_flattened_and_shortened(tmp_path: Path) -> None:
    prompt = "line one\n\n   line two " + "x" * 200
    write_session(tmp_path, "proj", "aaaaaaaa-0000-0000-0000-000000000000", prompt=prompt, mtime=1)
    first = list_conversations(tmp_path, 5)[0].first_prompt
    assert len(first) == FIRST_PROMPT_CHARS
    assert first.startswith("line one line two xxx")
    assert first.endswith("…")


def test_a_session_without_a_user_message_has_an_empty_first_prompt(tmp_path: Path) -> None:
    records: list[dict[str, Any]] = [{"id": "m2", "type": "gemini", "content": "an answer"}]
    write_session(tmp_path, "proj", "aaaaaaaa-0000-0000-0000-000000000000", records=records, mtime=1)
    (conversation,) = list_conversations(tmp_path, 5)
    assert conversation.first_prompt == ""
    assert conversation.last_active == "2026-11-30T08:00:00.000Z"


def test_a_history_less_recording_is_nobodys_conversation_and_is_not_listed(tmp_path: Path) -> None:
    # What an unused warm session or a failed load leaves: a header and the workspace preamble, no turn.
    preamble: list[dict[str, Any]] = [
        {"$set": {"messages": [{"type": "user", "content": [{"text": SESSION_CONTEXT}]}]}}
    ]
    write_session(tmp_path, "proj", "aaaaaaaa-0000-0000-0000-000000000000", records=[], mtime=1)
    write_session(tmp_path, "proj", "bbbbbbbb-0000-0000-0000-000000000000", records=preamble, mtime=2)
    write_session(tmp_path, "proj", "cccccccc-0000-0000-0000-000000000000", mtime=3)
    assert [c.id for c in list_conversations(tmp_path, 5)] == ["cccccccc-0000-0000-0000-000000000000"]


def test_the_latest_set_patch_gives_the_last_activity(tmp_path: Path) -> None:
    records: list[dict[str, Any]] = [
        {"type": "user", "content": [{"text": "q"}]},
        {"$set": {"lastUpdated": "2026-11-30T09:00:00.000Z"}},
        {"$set": {"summary": "no time in this one"}},
        {"$set": {"lastUpdated": 12345}},
        {"$set": "not a patch"},
        {"$set": {"lastUpdated": "2026-11-30T10:00:00.000Z"}},
        {"$set": {"memoryScratchpad": "x"}},
    ]
    write_session(tmp_path, "proj", "aaaaaaaa-0000-0000-0000-000000000000", records=records, mtime=1)
    assert list_conversations(tmp_path, 5)[0].last_active == "2026-11-30T10:00:00.000Z"


def test_the_last_activity_of_a_long_session_comes_from_its_end(tmp_path: Path) -> None:
    records: list[dict[str, Any]] = [{"type": "user", "content": [{"text": "q"}]}]
    for i in range(500):
        records.append({"type": "gemini", "content": f"answer {i} " + "y" * 300})
        records.append({"$set": {"lastUpdated": f"2026-11-30T10:{i // 60:02d}:{i % 60:02d}.000Z"}})
    write_session(tmp_path, "proj", "aaaaaaaa-0000-0000-0000-000000000000", records=records, mtime=1)
    (conversation,) = list_conversations(tmp_path, 5)
    assert conversation.last_active == "2026-11-30T10:08:19.000Z"
    assert conversation.first_prompt == "q"


def test_without_any_update_time_the_start_time_is_used(tmp_path: Path) -> None:
    path = tmp_path / ".gemini" / "tmp" / "proj" / "chats" / "session-2026-11-30T08-00-aaaaaaaa.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text(
        '{"sessionId": "aaaaaaaa", "startTime": "2026-01-01T00:00:00Z"}\n{"type": "user", "content": "q"}\n',
        encoding="utf-8",
    )
    (conversation,) = list_conversations(tmp_path, 5)
    assert conversation.last_active == "2026-01-01T00:00:00Z"
    assert conversation.cwd == ""  # no .project_root next to chats/


def test_the_same_session_in_two_files_is_listed_once_from_the_newest(tmp_path: Path) -> None:
    write_session(tmp_path, "proj-a", "aaaaaaaa-0000-0000-0000-000000000000", prompt="old copy", mtime=1000)
    write_session(tmp_path, "proj-b", "aaaaaaaa-0000-0000-0000-000000000000", prompt="new copy", mtime=2000)
    write_session(tmp_path, "proj-c", "bbbbbbbb-0000-0000-0000-000000000000", mtime=500)
    conversations = list_conversations(tmp_path, 2)
    assert [(c.id[:8], c.first_prompt) for c in conversations] == [
        ("aaaaaaaa", "new copy"),
        ("bbbbbbbb", "explain the build"),
    ]
