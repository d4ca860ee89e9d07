"""The usage of a Gemini CLI call from its session recording, replayed the way the CLI 0.61.0 writes it."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from gemini_relay.backends.gemini_cli.usage import (
    FIRST_TAIL_BYTES,
    RecordedCall,
    call_usage,
    last_call_turns,
    recorded_call,
    rewind_call,
    sum_usage,
)
from gemini_relay.core.events import Usage

SID = "0ece59e5-d8da-425f-aca1-1b42c892f087"
TOKENS = {"input": 12, "output": 8, "cached": 2, "thoughts": 3, "tool": 0, "total": 23}
ONE = Usage(input_tokens=12, output_tokens=8, thinking_tokens=3, cached_tokens=2, total_tokens=23)


def header() -> dict[str, Any]:
    return {"sessionId": SID, "projectHash": "h", "startTime": "t", "lastUpdated": "t", "kind": "main"}


def user(n: int, text: str) -> dict[str, Any]:
    return {"id": f"u{n}", "type": "user", "content": [{"text": text}]}


def gemini(n: int, text: str = "answer", **extra: Any) -> dict[str, Any]:
    return {"id": f"g{n}", "type": "gemini", "content": text, "tokens": TOKENS, "model": "m", **extra}


def tool_answer(n: int) -> dict[str, Any]:
    return {"id": f"u{n}", "type": "user", "content": [{"functionResponse": {"name": "read_file", "response": {}}}]}


def context() -> dict[str, Any]:
    return {"$set": {"messages": [{"id": "c", "type": "user", "content": [{"text": "<session_context>\nx"}]}]}}


def lines(*records: dict[str, Any]) -> list[str]:
    return [json.dumps(r) for r in records]


def usage_of(*records: dict[str, Any]) -> Usage | None:
    turns = last_call_turns(lines(*records))
    return None if turns is None else sum_usage(turns)


def test_a_calls_usage_is_its_own_answer_not_the_earlier_turns() -> None:
    got = usage_of(header(), context(), user(1, "first"), gemini(1), user(2, "second"), gemini(2))
    assert got == ONE


def test_a_tool_round_trip_counts_both_answers_once_each_though_the_first_is_written_twice() -> None:
    call = gemini(1, "")
    records = [header(), user(1, "read it"), call, {"$set": {"lastUpdated": "t"}}, {**call, "toolCalls": [{}]}]
    got = usage_of(*records, tool_answer(2), gemini(2, "Read it."))
    assert got == Usage(input_tokens=24, output_tokens=16, thinking_tokens=6, cached_tokens=4, total_tokens=46)


def test_the_workspace_context_and_a_tools_answer_are_not_the_calls_prompt() -> None:
    assert last_call_turns(lines(header(), context(), tool_answer(1), gemini(1))) is None


def test_a_history_rewrite_and_a_rewind_are_replayed() -> None:
    rewrite = {"$set": {"messages": [user(1, "kept"), gemini(1)]}}
    assert usage_of(header(), user(9, "dropped"), rewrite) == ONE
    rewound = usage_of(header(), user(1, "first"), gemini(1), user(2, "undone"), gemini(2), {"$rewindTo": "u2"})
    assert rewound == ONE


def test_a_call_without_counted_answers_has_no_usage() -> None:
    assert usage_of(header(), user(1, "blocked")) is None
    assert usage_of(header(), user(1, "p"), {**gemini(1), "tokens": None}) is None


def write(home: Path, name: str, records: list[dict[str, Any]]) -> Path:
    chats = home / ".gemini" / "tmp" / "proj" / "chats"
    chats.mkdir(parents=True, exist_ok=True)
    path = chats / name
    path.write_text("".join(line + "\n" for line in lines(*records)), encoding="utf-8")
    return path


def test_the_usage_is_read_from_the_sessions_recording_and_none_without_one(tmp_path: Path) -> None:
    assert call_usage(tmp_path, SID) is None
    write(tmp_path, f"session-2026-12-01T20-00-{SID[:8]}.jsonl", [header(), user(1, "hi"), gemini(1)])
    assert call_usage(tmp_path, SID) == ONE


def test_a_call_longer_than_the_first_tail_read_is_still_counted_from_its_prompt(tmp_path: Path) -> None:
    big = "x" * (FIRST_TAIL_BYTES * 2)
    records = [header(), user(1, "old"), gemini(1), user(2, "a long one"), gemini(2, big), gemini(3)]
    write(tmp_path, f"session-2026-12-01T20-00-{SID[:8]}.jsonl", records)
    assert call_usage(tmp_path, SID) == Usage(
        input_tokens=24, output_tokens=16, thinking_tokens=6, cached_tokens=4, total_tokens=46
    )


def stamped(record: dict[str, Any], at: str) -> dict[str, Any]:
    return {**record, "timestamp": at}


def test_a_call_is_answered_when_its_prompt_is_recorded_and_a_model_message_ends_the_recording(tmp_path: Path) -> None:
    name = f"session-2026-12-01T20-00-{SID[:8]}.jsonl"
    write(tmp_path, name, [header(), stamped(user(1, "hi"), "2026-12-01T20:00:01.000Z"), gemini(1)])
    since = 1796155200.5  # 2026-12-01T20:00:00.500Z
    assert recorded_call(tmp_path, SID, since) == RecordedCall((gemini(1),), answered=True)


def test_a_prompt_the_cli_rolled_back_after_a_failed_stream_leaves_the_call_unanswered(tmp_path: Path) -> None:
    earlier = [stamped(user(1, "first"), "2026-12-01T20:00:00.000Z"), gemini(1)]
    rolled_back = {"$set": {"messages": earlier}}  # what the CLI writes when the second prompt's stream failed
    second = stamped(user(2, "second"), "2026-12-01T20:00:06.000Z")
    write(tmp_path, f"session-2026-12-01T20-00-{SID[:8]}.jsonl", [header(), *earlier, second, rolled_back])
    since = 1796155205.0  # after the first prompt: the last recorded prompt is not this call's
    assert recorded_call(tmp_path, SID, since) == RecordedCall((), answered=False)


def test_a_file_without_this_calls_prompt_says_nothing_of_the_call(tmp_path: Path) -> None:
    # Deleted mid-turn by a starting CLI's session cleanup: the answer went to a new file, without its prompt.
    path = write(tmp_path, f"session-2026-12-01T20-00-{SID[:8]}.jsonl", [gemini(2)])
    assert recorded_call(tmp_path, SID, 1796155205.0, path=path) is None


def test_a_call_that_ends_on_a_tools_answer_is_unanswered(tmp_path: Path) -> None:
    write(tmp_path, f"session-2026-12-01T20-00-{SID[:8]}.jsonl", [header(), user(1, "read"), gemini(1), tool_answer(2)])
    call = recorded_call(tmp_path, SID)
    assert call is not None and not call.answered


def test_a_stopped_calls_unanswered_prompt_is_rewound_with_the_clis_own_record(tmp_path: Path) -> None:
    earlier = [stamped(user(1, "first"), "2026-12-01T20:00:00.000Z"), gemini(1)]
    cut = stamped(user(2, "cancelled"), "2026-12-01T20:00:06.000Z")
    path = write(tmp_path, f"session-2026-12-01T20-00-{SID[:8]}.jsonl", [header(), *earlier, cut])
    assert rewind_call(tmp_path, SID, since=1796155205.0)
    assert path.read_text(encoding="utf-8").splitlines()[-1] == json.dumps({"$rewindTo": "u2"})
    assert last_call_turns(path.read_text(encoding="utf-8").splitlines()) == [gemini(1)]


def test_an_answered_prompt_restamped_by_a_resume_is_not_rewound(tmp_path: Path) -> None:
    resumed = [stamped(user(1, "first"), "2026-12-01T20:00:06.000Z"), gemini(1)]  # a resume restamps what it loads
    path = write(tmp_path, f"session-2026-12-01T20-00-{SID[:8]}.jsonl", [header(), *resumed])
    before = path.read_bytes()
    assert not rewind_call(tmp_path, SID, since=1796155205.0)
    assert path.read_bytes() == before


def test_a_recording_not_written_since_the_prompt_was_sent_says_nothing_of_the_call(tmp_path: Path) -> None:
    # The CLI stops recording on a full disk: its file then ends with an earlier call, answered or not.
    write(tmp_path, f"session-2026-12-01T20-00-{SID[:8]}.jsonl", [header(), user(1, "earlier"), gemini(1)])
    assert recorded_call(tmp_path, SID, since=time.time() + 60) is None
