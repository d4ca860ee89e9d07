"""GeminiCliDecoder on the real Gemini CLI 0.61.0 stream-json transcripts (tests/data/streams), fed in odd chunks."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from gemini_relay.backends.gemini_cli.decoder import GeminiCliDecoder, decode_event
from gemini_relay.core.events import (
    AgentEvent,
    Finished,
    SessionStarted,
    StreamNotice,
    TextDelta,
    ToolCall,
    ToolResult,
    Usage,
)
from tests.fakes.fake_gemini_api import UNICODE_TEXT
from tests.streams.chunked import decode_in_chunks

DATA = Path(__file__).resolve().parents[2] / "data" / "streams"
VERSION = "gemini-cli-0.61.0"
CHUNK_SIZES = (1, 7, 13, 61, 4096)
ECHO_USAGE = Usage(input_tokens=12, output_tokens=8, thinking_tokens=0, cached_tokens=0, total_tokens=23)
ZERO_USAGE = Usage()
MODELS = ("gemini-2.5-pro",)  # the result's stats name the models the CLI called, failed calls included
THOUGHT_TEXT = "**Considering the request** The user wants a short answer."


def transcript(scenario: str) -> bytes:
    return (DATA / f"{VERSION}-{scenario}.jsonl").read_bytes()


def raw_lines(scenario: str) -> list[dict[str, Any]]:
    """The transcript's own JSON objects, so ids re-recorded with the fixtures are never hard-coded here."""
    return [json.loads(line) for line in transcript(scenario).splitlines() if line.strip()]


def raw_session_id(scenario: str) -> str:
    init = raw_lines(scenario)[0]
    assert init["type"] == "init"
    session_id: str = init["session_id"]
    return session_id


def index() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((DATA / f"{VERSION}-index.json").read_text(encoding="utf-8"))
    return loaded


def decode(data: bytes, size: int) -> tuple[list[AgentEvent], GeminiCliDecoder]:
    return decode_in_chunks(GeminiCliDecoder(), data, size)


def text_of(events: list[AgentEvent]) -> str:
    return "".join(e.text for e in events if isinstance(e, TextDelta))


def finished(events: list[AgentEvent]) -> Finished:
    assert isinstance(events[-1], Finished)
    return events[-1]


# --- the recordings themselves --------------------------------------------------------------------------------


def test_every_recorded_stdout_file_named_in_the_index_exists() -> None:
    for scenario, entry in index().items():
        name = entry["stdout_file"]
        if name is not None:
            assert (DATA / name).is_file(), scenario


def test_every_recorded_transcript_decodes_the_same_whatever_the_chunk_size() -> None:
    for path in sorted(DATA.glob(f"{VERSION}-*.jsonl")):
        data = path.read_bytes()
        reference, _ = decode(data, len(data))
        for size in CHUNK_SIZES:
            events, decoder = decode(data, size)
            assert events == reference, (path.name, size)
            assert decoder.skipped == 0


def test_every_recorded_transcript_starts_with_its_session_and_ends_with_one_result() -> None:
    for path in sorted(DATA.glob(f"{VERSION}-*.jsonl")):
        events, _ = decode(path.read_bytes(), 13)
        assert isinstance(events[0], SessionStarted), path.name
        assert events[0].model == "gemini-2.5-pro"
        assert sum(isinstance(e, Finished) for e in events) == 1, path.name
        assert isinstance(events[-1], Finished), path.name


# --- scenarios ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("size", CHUNK_SIZES)
def test_echo_yields_the_session_the_exact_answer_and_a_successful_finish_with_usage(size: int) -> None:
    events, decoder = decode(transcript("echo"), size)
    session_id = raw_session_id("echo")
    assert str(uuid.UUID(session_id)) == session_id
    assert events == [
        SessionStarted(session_id=session_id, model="gemini-2.5-pro"),
        TextDelta("Hello from fake Gemi"),
        TextDelta("ni! You said: say hi"),
        Finished(ok=True, status="SUCCESS", usage=ECHO_USAGE, models=MODELS),
    ]
    assert text_of(events) == "Hello from fake Gemini! You said: say hi"
    assert decoder.skipped == 0


def test_the_users_own_prompt_echo_is_not_part_of_the_answer() -> None:
    events, _ = decode(transcript("echo"), 7)
    assert "say hi" not in [e.text for e in events if isinstance(e, TextDelta)]


@pytest.mark.parametrize("size", CHUNK_SIZES)
def test_a_tool_call_yields_the_call_its_result_then_the_answer(size: int) -> None:
    events, _ = decode(transcript("tool_call"), size)
    (tool_id,) = {line["tool_id"] for line in raw_lines("tool_call") if "tool_id" in line}
    assert tool_id.startswith("read_file__read_file_")
    assert events[1:] == [
        ToolCall(tool_id=tool_id, name="read_file", parameters={"file_path": "hello.txt"}),
        ToolResult(tool_id=tool_id, ok=True, output=""),
        TextDelta("Read it."),
        Finished(
            ok=True,
            status="SUCCESS",
            usage=Usage(input_tokens=24, output_tokens=16, total_tokens=46),
            models=MODELS,
        ),
    ]


@pytest.mark.parametrize(
    ("scenario", "message"),
    [
        ("empty", "The model returned an empty response with no text or thoughts. This may be a transient API issue; "
         "please try again."),
        ("safety", "The model response was blocked due to safety settings."),
    ],
)  # fmt: skip
def test_an_empty_or_blocked_answer_is_an_error_notice_and_a_failed_finish_without_text(
    scenario: str, message: str
) -> None:
    events, _ = decode(transcript(scenario), 7)
    assert events[1:] == [
        StreamNotice(message=message, severity="error"),
        Finished(ok=False, status="ERROR", usage=ECHO_USAGE, models=MODELS),
    ]
    assert text_of(events) == ""


@pytest.mark.parametrize(
    ("scenario", "error"),
    [
        (
            "quota",
            "[API Error: You exceeded your current quota, please check your plan and billing details.]\n"
            "Please wait and try again later. To increase your limits, request a quota increase through AI Studio, "
            "or switch to another /auth method",
        ),
        (
            "quota_daily",
            "[API Error: You have exhausted your daily quota on this model.]\n"
            "Please wait and try again later. To increase your limits, request a quota increase through AI Studio, "
            "or switch to another /auth method",
        ),
        (
            "error_404",
            "[API Error: models/gemini-2.5-pro is not found for API version v1beta, or is not supported for "
            "generateContent. Call ListModels to see the list of available models and their supported methods.]",
        ),
        (
            "error_500",
            '[API Error: {"error":{"code":500,"message":"An internal error has occurred. Please retry or report in '
            'https://developers.generativeai.google/guide/troubleshooting","status":"INTERNAL"}}]',
        ),
        ("error_503", "[API Error: The model is overloaded. Please try again later.]"),
        ("hang_then_stop", "[API Error: exception TypeError: fetch failed sending request]"),
        ("nonjson", "[API Error: Incomplete JSON segment at the end]"),
    ],
)
def test_an_api_error_is_a_failed_finish_carrying_the_clis_message(scenario: str, error: str) -> None:
    events, _ = decode(transcript(scenario), 13)
    assert events[1:] == [
        Finished(ok=False, status="ERROR", error=error, error_type="unknown", usage=ZERO_USAGE, models=MODELS)
    ]


def test_a_stall_keeps_the_partial_answer_before_the_failed_finish() -> None:
    events, _ = decode(transcript("stall_then_stop"), 5)
    assert text_of(events) == "Partial answer before the stall"
    assert finished(events).error == "[API Error: terminated]"
    assert not finished(events).ok


@pytest.mark.parametrize("size", CHUNK_SIZES)
def test_unicode_answers_arrive_exactly_whatever_the_chunking(size: int) -> None:
    events, _ = decode(transcript("unicode"), size)
    assert text_of(events) == UNICODE_TEXT
    assert finished(events).ok
    assert not any("\ufffd" in e.text for e in events if isinstance(e, TextDelta))


def test_a_json_answer_split_across_deltas_joins_to_valid_json() -> None:
    events, _ = decode(transcript("json"), 7)
    assert len([e for e in events if isinstance(e, TextDelta)]) == 2
    assert json.loads(text_of(events)) == {"answer": 42, "items": ["a", "b"]}
    assert finished(events).ok


def test_thought_parts_never_leak_into_the_answer() -> None:
    data = transcript("thought")
    events, _ = decode(data, 7)
    assert text_of(events) == "Answer after thinking."
    assert THOUGHT_TEXT not in repr(events)
    assert "Considering" not in repr(events)
    assert finished(events).ok


def test_a_resumed_session_keeps_the_id_the_first_turn_was_given() -> None:
    first, _ = decode(transcript("session_id"), 11)
    resumed, _ = decode(transcript("resume_history"), 11)
    first_id = index()["session_id"]["argv_flags"][3]  # the id the first turn was started with (--session-id)
    assert first[0] == SessionStarted(session_id=first_id, model="gemini-2.5-pro")
    assert resumed[0] == SessionStarted(session_id=first_id, model="gemini-2.5-pro")
    assert text_of(first) == "Hello from fake Gemini! You said: first turn"
    assert text_of(resumed) == "turns=2"
    assert index()["session_id"]["argv_flags"][2] == "--session-id"
    assert index()["resume_history"]["argv_flags"][2:4] == ["--resume", first_id]


# --- noise and odd lines --------------------------------------------------------------------------------------


def test_non_json_lines_on_stdout_are_skipped_and_counted() -> None:
    noisy = (
        b"Loaded cached credentials.\n"
        + transcript("echo").replace(b"\n", b"\nBoth GOOGLE_API_KEY and GEMINI_API_KEY are set.\n", 1)
        + b"\n\n   \n"
    )
    events, decoder = decode(noisy, 7)
    clean, _ = decode(transcript("echo"), 7)
    assert events == clean
    assert decoder.skipped == 2


def test_a_transcript_without_a_final_newline_still_yields_its_result() -> None:
    events, _ = decode(transcript("echo").rstrip(b"\n"), 9)
    assert isinstance(events[-1], Finished)
    assert events[-1].ok


def test_crlf_transcripts_decode_like_lf_ones() -> None:
    data = transcript("tool_call")
    crlf, _ = decode(data.replace(b"\n", b"\r\n"), 7)
    lf, _ = decode(data, 7)
    assert crlf == lf


def test_a_run_killed_before_its_result_has_no_finished_event() -> None:
    data = transcript("echo")
    cut = data[: data.index(b'{"type":"result"')]
    events, _ = decode(cut, 7)
    assert not any(isinstance(e, Finished) for e in events)
    assert text_of(events) == "Hello from fake Gemini! You said: say hi"


def test_unknown_event_kinds_and_user_messages_yield_nothing() -> None:
    assert decode_event({"type": "future_kind", "x": 1}) is None
    assert decode_event({"type": "message", "role": "user", "content": "hi"}) is None
    assert decode_event({"no_type": True}) is None


def test_wrongly_typed_fields_are_tolerated() -> None:
    assert decode_event({"type": "init", "session_id": 5}) == SessionStarted(session_id="", model=None)
    assert decode_event({"type": "message", "role": "assistant", "content": None}) == TextDelta("")
    assert decode_event({"type": "tool_use", "tool_id": "t", "tool_name": "x", "parameters": [1]}) == ToolCall(
        tool_id="t", name="x", parameters={}
    )
    assert decode_event({"type": "error", "message": "boom"}) == StreamNotice(message="boom", severity="error")
    assert decode_event({"type": "result", "stats": {"input_tokens": True}}) == Finished(
        ok=False, status="UNKNOWN", usage=Usage()
    )


def test_a_denied_tool_result_carries_the_error_type_and_message() -> None:
    line = {
        "type": "tool_result",
        "tool_id": "write_file__write_file_1_0",
        "status": "error",
        "output": "Tool execution denied by policy.",
        "error": {"type": "policy_violation", "message": "Tool execution denied by policy. Plan Mode."},
    }
    assert decode_event(line) == ToolResult(
        tool_id="write_file__write_file_1_0",
        ok=False,
        output="Tool execution denied by policy.",
        error_type="policy_violation",
        error_message="Tool execution denied by policy. Plan Mode.",
    )


def test_a_warning_severity_is_kept() -> None:
    assert decode_event({"type": "error", "severity": "warning", "message": "loop"}) == StreamNotice(
        message="loop", severity="warning"
    )


def test_a_result_with_a_response_field_carries_it_as_the_full_text_and_thoughts_as_thinking_tokens() -> None:
    event = decode_event(
        {
            "type": "result",
            "status": "success",
            "response": "whole answer",
            "stats": {"input": 3, "output_tokens": 4, "thoughts": 2, "cached": 1, "total_tokens": 10},
        }
    )
    assert event == Finished(
        ok=True,
        status="SUCCESS",
        text="whole answer",
        usage=Usage(input_tokens=3, output_tokens=4, thinking_tokens=2, cached_tokens=1, total_tokens=10),
    )


def test_a_result_without_stats_has_no_usage() -> None:
    assert decode_event({"type": "result", "status": "success"}) == Finished(ok=True, status="SUCCESS")


CUT_HEAD = (
    b'{"type":"init","session_id":"s","model":"m"}\n{"type":"message","timestamp":"t","role":"assistant","content":"'
)


def test_an_answer_event_cut_at_the_pipe_limit_keeps_its_text_and_says_where_it_stopped() -> None:
    decoder = GeminiCliDecoder()
    body = b"line\\n" * 14_000  # escaped newlines, as the CLI writes them
    cut = (CUT_HEAD + body)[:65_536]
    events = decoder.push(cut) + decoder.flush()
    text = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert text.startswith("line\nline\n") and len(text) > 50_000
    assert decoder.cut_line_bytes is not None
    note = decoder.truncation()
    assert note is not None and "stopped at 65,536 bytes and its last event was cut off after " in note


def test_a_stream_under_the_pipe_limit_has_no_truncation_note() -> None:
    decoder = GeminiCliDecoder()
    decoder.push(CUT_HEAD + b"short")
    decoder.flush()
    assert decoder.truncation() is None
