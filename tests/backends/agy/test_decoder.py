"""AgyDecoder on transcripts built from agy.md's lines (tests/data/streams/agy-*.jsonl), fed in odd chunk sizes.

agy-1.1.8-pang / agy-1.1.8-error are agy.md §2.1's captures verbatim; the 1.1.15 and 1.2.9 files are assembled from
the field shapes and measured rules of §2.2, §3.1 and §3.3 (agy-mcp published no raw capture for them).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gemini_relay.backends.agy.decoder import AgyDecoder, decode_event
from gemini_relay.core.events import AgentEvent, Finished, SessionStarted, StepChanged, TextDelta, Usage
from gemini_relay.streams.framing import MAX_LINE_BYTES
from tests.streams.chunked import decode_in_chunks

DATA = Path(__file__).resolve().parents[2] / "data" / "streams"
CHUNK_SIZES = (1, 3, 7, 61, 4096)
PANG_ID = "21f0f78b-95b7-4aa5-a438-85a5078eac48"
CID = "3f0d7c1e-8a42-4b1f-9d55-0c6a2e9b7f13"


def transcript(name: str) -> bytes:
    return (DATA / f"agy-{name}.jsonl").read_bytes()


def decode(data: bytes, size: int = 4096) -> tuple[list[AgentEvent], AgyDecoder]:
    return decode_in_chunks(AgyDecoder(), data, size)


def finished(events: list[AgentEvent]) -> Finished:
    found = [e for e in events if isinstance(e, Finished)]
    assert len(found) == 1
    return found[0]


def text_of(events: list[AgentEvent]) -> str:
    return "".join(e.text for e in events if isinstance(e, TextDelta))


def line(obj: object) -> bytes:
    return (json.dumps(obj, ensure_ascii=False) + "\n").encode("utf-8")


@pytest.mark.parametrize("size", CHUNK_SIZES)
def test_the_1_1_8_capture_names_the_conversation_streams_the_text_and_finishes(size: int) -> None:
    events, decoder = decode(transcript("1.1.8-pang"), size)
    assert events[0] == SessionStarted(session_id=PANG_ID)
    assert text_of(events) == "pang\n"
    result = finished(events)
    assert (result.ok, result.status, result.text, result.num_turns) == (True, "SUCCESS", "pang", 1)
    assert result.session_id == PANG_ID
    assert result.error is None and not result.has_structured_output
    assert decoder.skipped == 0


def test_the_1_1_8_result_usage_gains_thinking_and_cache_tokens_from_the_steps() -> None:
    events, _ = decode(transcript("1.1.8-pang"))
    assert finished(events).usage == Usage(
        input_tokens=7896, output_tokens=282, thinking_tokens=277, cached_tokens=12172, total_tokens=8178
    )


@pytest.mark.parametrize("size", CHUNK_SIZES)
def test_agent_response_deltas_concatenate_to_the_response_byte_for_byte_even_split_mid_character(size: int) -> None:
    events, _ = decode(transcript("1.1.15-chunks"), size)
    result = finished(events)
    assert text_of(events) == "Grüße aus Zürich — 東京 👋🏽\nsecond line\n"
    assert result.text == text_of(events).rstrip("\n")
    assert "\ufffd" not in text_of(events)
    assert result.usage == Usage(900, 40, 120, 3000, 940)


def test_tool_and_user_input_steps_carry_no_answer_text() -> None:
    events, _ = decode(transcript("1.1.15-chunks"))
    assert [e.text for e in events if isinstance(e, TextDelta)][0] == "Grüße aus "


def test_deltas_are_never_deduplicated_by_step_index() -> None:
    step = {"conversation_id": CID, "step_index": 4, "state": "ACTIVE", "step_type": "agent_response"}
    data = b"".join(line({"event": "step_update", "step_update": {**step, "text_delta": t}}) for t in ("ab", "ab"))
    events, _ = decode(data)
    assert text_of(events) == "abab"


def test_an_error_result_before_any_conversation_names_no_conversation() -> None:
    events, _ = decode(transcript("1.1.8-error"))
    assert not any(isinstance(e, SessionStarted) for e in events)
    result = finished(events)
    assert (result.ok, result.status, result.error, result.text) == (False, "ERROR", "timeout waiting for response", "")
    assert result.session_id is None


def test_the_region_failure_keeps_the_payload_error_and_no_conversation() -> None:
    result = finished(decode(transcript("1.2.9-model-not-found"))[0])
    assert result.status == "ERROR"
    assert result.error is not None and result.error.startswith("Selected model is not supported")
    assert result.session_id is None


def test_a_print_timeout_success_keeps_the_partial_response_and_zeroed_usage() -> None:
    events, _ = decode(transcript("1.2.9-print-timeout"))
    result = finished(events)
    assert result.ok and result.text == "Partial analysis: the first two modules look"
    assert result.usage == Usage()


def test_an_empty_response_after_streamed_deltas_defers_to_the_deltas() -> None:
    step = {"conversation_id": CID, "step_index": 1, "state": "ACTIVE", "step_type": "agent_response"}
    result_line = {"event": "result", "result": {"conversation_id": CID, "status": "SUCCESS", "response": ""}}
    data = line({"event": "step_update", "step_update": {**step, "text_delta": "half an answ"}}) + line(result_line)
    events, _ = decode(data)
    assert finished(events).text is None  # RunRecord.text then falls back to the streamed text


def test_an_empty_response_without_deltas_stays_empty() -> None:
    assert finished(decode(transcript("1.2.9-print-timeout-empty"))[0]).text == ""


def test_a_schema_run_keeps_structured_output_and_denied_actions() -> None:
    result = finished(decode(transcript("1.2.9-schema"))[0])
    assert result.structured_output == {"k": 1} and result.has_structured_output
    assert result.denied_actions == ("run_command",)


@pytest.mark.parametrize("value", [{"k": 1}, [1, 2], "scalar", None])
def test_structured_output_of_every_shape_is_kept_verbatim_including_null(value: object) -> None:
    payload = {"conversation_id": CID, "status": "SUCCESS", "response": "", "structured_output": value}
    result = decode_event({"event": "result", "result": payload})
    assert isinstance(result, Finished)
    assert result.has_structured_output and result.structured_output == value


def test_a_result_without_structured_output_says_so() -> None:
    result = decode_event({"event": "result", "result": {"status": "SUCCESS", "response": "x"}})
    assert isinstance(result, Finished) and not result.has_structured_output


def test_denied_action_objects_are_named_by_their_tool() -> None:
    payload = {"status": "SUCCESS", "denied_actions": [{"tool_name": "run_command", "reason": "x"}, "write_file", 3]}
    result = decode_event({"event": "result", "result": payload})
    assert isinstance(result, Finished) and result.denied_actions == ("run_command", "write_file")


@pytest.mark.parametrize("size", CHUNK_SIZES)
def test_noise_lines_are_skipped_and_counted_blank_lines_are_not_and_an_unterminated_result_decodes(size: int) -> None:
    events, decoder = decode(transcript("1.2.9-malformed"), size)
    assert decoder.skipped == 3  # the warning, the JSON array and the cut object
    assert finished(events).text == "ok"
    assert text_of(events) == "ok"


def test_a_line_over_8_mib_is_dropped_and_counted_without_losing_the_result() -> None:
    huge = b'{"event":"init","init":{"tools":["' + b"x" * MAX_LINE_BYTES + b'"]}}\n'
    result_line = line({"event": "result", "result": {"conversation_id": CID, "status": "SUCCESS", "response": "r"}})
    events, decoder = decode(huge + result_line, 1 << 20)
    assert decoder.skipped == 1
    assert finished(events).text == "r"


def test_the_conversation_id_comes_from_a_later_event_when_init_is_missing() -> None:
    step = {"conversation_id": CID, "step_index": 0, "state": "DONE", "step_type": "user_input"}
    data = line({"event": "step_update", "step_update": step}) + line(
        {"event": "result", "result": {"conversation_id": "", "status": "SUCCESS", "response": "x"}}
    )
    events, decoder = decode(data)
    assert events[0] == SessionStarted(session_id=CID)
    assert finished(events).session_id == CID
    assert decoder.conversation_id == CID


def test_each_turn_of_a_stream_json_input_session_finishes_with_its_own_count() -> None:
    init = line({"event": "init", "conversation_id": CID, "init": {}})
    turns = [
        line(
            {"event": "result", "result": {"conversation_id": CID, "status": "SUCCESS", "response": r, "num_turns": n}}
        )
        for n, r in ((1, "one"), (2, "two"))
    ]
    events, _ = decode(init + b"".join(turns))
    assert [(e.text, e.num_turns) for e in events if isinstance(e, Finished)] == [("one", 1), ("two", 2)]


@pytest.mark.parametrize(
    "obj",
    [
        {"event": "step_update", "step_update": {"step_type": "user_input", "state": "DONE"}},
        {"event": "step_update", "step_update": {"step_type": "tool", "text_delta": "not answer text"}},
        {"event": "step_update", "step_update": {"step_type": "agent_response", "text_delta": ""}},
        {"event": "init", "conversation_id": "", "init": {}},
        {"event": "something_new", "something_new": {}},
        {"type": "result"},
    ],
)
def test_events_that_carry_nothing_for_the_relay_decode_to_none(obj: dict[str, object]) -> None:
    assert decode_event(obj) is None


def test_init_reports_the_model_when_agy_names_it() -> None:
    event = decode_event({"event": "init", "conversation_id": CID, "init": {"model": "gemini-3.8-flash-high"}})
    assert event == SessionStarted(session_id=CID, model="gemini-3.8-flash-high")


def test_an_unrecognized_status_is_not_ok_and_kept_as_sent() -> None:
    result = decode_event({"event": "result", "result": {"status": "MAX_TURNS", "response": "so far"}})
    assert isinstance(result, Finished) and (result.ok, result.status, result.text) == (False, "MAX_TURNS", "so far")


def test_each_new_step_is_reported_once_with_agys_own_step_type() -> None:
    events, _ = decode(transcript("1.1.15-chunks"))
    assert [e.step_type for e in events if isinstance(e, StepChanged)] == ["user_input", "tool", "agent_response"]
