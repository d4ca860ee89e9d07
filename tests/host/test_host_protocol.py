"""The host protocol's values: every event, spec and error crosses the socket unchanged in kind and data."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gemini_relay.core.events import (
    AgentEvent,
    Finished,
    RunNotice,
    SessionStarted,
    Spawned,
    StreamNotice,
    TextDelta,
    ToolCall,
    ToolResult,
    Usage,
)
from gemini_relay.core.result import RunResult
from gemini_relay.core.spec import RunSpec
from gemini_relay.errors import BackendUnavailable, InputError, RunFailed, RunTimedOut
from gemini_relay.jobs.protocol import (
    SUN_PATH_MAX,
    decode_error,
    decode_event,
    decode_spec,
    encode_error,
    encode_event,
    encode_spec,
    socket_address,
)
from gemini_relay.jobs.store.job_store import JobConflict

EVENTS: list[AgentEvent] = [
    SessionStarted("s-1", model="gemini-2.5-pro"),
    TextDelta("héllo"),
    ToolCall("t1", "read_file", {"file_path": "a.txt"}),
    ToolResult("t1", ok=False, error_type="denied", error_message="no"),
    StreamNotice("careful", severity="error"),
    RunNotice("⚠️ not honoured"),
    Spawned(4242),
    Finished(
        ok=True,
        status="SUCCESS",
        text="all",
        usage=Usage(1, 2, 3, 4, 10),
        num_turns=2,
        structured_output={"a": 1},
        has_structured_output=True,
        denied_actions=("write_file",),
        session_id="s-1",
        partial=True,
        files=("/tmp/a.png",),
        models=("gemini-2.5-flash",),
    ),  # fmt: skip
]


@pytest.mark.parametrize("event", EVENTS, ids=lambda e: type(e).__name__)
def test_every_event_survives_the_wire(event: AgentEvent) -> None:
    assert decode_event(json.loads(json.dumps(encode_event(event)))) == event


def test_a_spec_survives_the_wire(tmp_path: Path) -> None:
    spec = RunSpec(tool="gemini-ask", prompt="p", cwd=tmp_path, model="pro", add_dirs=(tmp_path,),
                   explicit=frozenset({"model"}), timeout_seconds=12.5)  # fmt: skip
    assert decode_spec(json.loads(json.dumps(encode_spec(spec)))) == spec


@pytest.mark.parametrize(
    "error",
    [JobConflict("busy"), InputError("bad", field="cwd"), BackendUnavailable("gone"), RunFailed("broke")],
    ids=lambda e: type(e).__name__,
)
def test_an_error_keeps_its_kind_and_field(error: Exception) -> None:
    assert isinstance(error, (InputError, BackendUnavailable, RunFailed))
    back = decode_error(json.loads(json.dumps(encode_error(error))))
    assert type(back) is type(error) and str(back) == str(error)
    assert getattr(back, "field", None) == getattr(error, "field", None)


def test_a_timed_out_result_is_raised_again_as_a_timeout() -> None:
    result = RunResult.from_error(RunTimedOut("gemini", 30, partial_text="so far"))
    with pytest.raises(RunTimedOut) as raised:
        RunResult.from_json(json.loads(json.dumps(result.to_json()))).raise_for_failure()
    assert raised.value.partial_text == "so far" and "timed out after 30s" in raised.value.message


def test_a_socket_path_past_the_af_unix_limit_is_reached_through_its_directory(tmp_path: Path) -> None:
    deep = tmp_path / ("d" * SUN_PATH_MAX)
    deep.mkdir()
    with socket_address(deep / "host.sock") as address:
        assert len(address) < SUN_PATH_MAX and address.endswith("/host.sock")
        assert Path(address).parent.resolve() == deep.resolve()
    with socket_address(tmp_path / "s.sock") as address:
        assert address == str(tmp_path / "s.sock") or len(str(tmp_path)) >= SUN_PATH_MAX


def test_a_finished_that_repeats_the_deltas_crosses_without_its_text_and_decodes_whole() -> None:
    answer = "x" * 200_000
    sent = encode_event(Finished(ok=True, status="success", text=answer), streamed=answer)
    assert sent["text"] is None and sent["text_streamed"] is True
    assert len(json.dumps(sent)) < 1_000
    decoded = decode_event(json.loads(json.dumps(sent)), streamed=answer)
    assert isinstance(decoded, Finished) and decoded.text == answer


def test_a_finished_whose_text_differs_from_the_deltas_keeps_it() -> None:
    sent = encode_event(Finished(ok=True, status="success", text="the upstream's own full text"), streamed="part")
    assert sent["text"] == "the upstream's own full text" and "text_streamed" not in sent
