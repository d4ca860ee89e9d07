"""ACP session updates become the events the stream-json decoder produces for the same upstream behaviour."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gemini_relay.backends.gemini_cli.acp.updates import UpdateTranslator, tool_name
from gemini_relay.core.events import AgentEvent, RunNotice, TextDelta, ToolCall, ToolResult, Usage
from gemini_relay.core.spec import RunSpec
from gemini_relay.streams.transcript import Transcript

SID = "s-1"


def update(session_update: str, **fields: Any) -> dict[str, Any]:
    return {"sessionId": SID, "update": {"sessionUpdate": session_update, **fields}}


def text(session_update: str, value: str) -> dict[str, Any]:
    return update(session_update, content={"type": "text", "text": value})


def folded(events: list[AgentEvent]) -> Transcript:
    """The events folded as the run's record folds them (the translator keeps no transcript of its own)."""
    record = Transcript(RunSpec(tool="gemini-ask", prompt="p", cwd=Path.cwd()))
    for event in events:
        record.apply(event)
    return record


def test_message_chunks_are_answer_deltas_in_order() -> None:
    t = UpdateTranslator(SID)
    events = t.update(text("agent_message_chunk", "Hello from fake Gemi")) + t.update(
        text("agent_message_chunk", "ni! You said: hi")
    )
    assert events == [TextDelta("Hello from fake Gemi"), TextDelta("ni! You said: hi")]
    assert t.answered and folded(events).text == "Hello from fake Gemini! You said: hi"


def test_the_translator_keeps_no_copy_of_the_answer() -> None:
    t = UpdateTranslator(SID)
    t.update(text("agent_message_chunk", "an answer only the run's record holds"))
    assert t.answered and "only the run's record" not in repr(vars(t))


def test_thoughts_replayed_user_turns_and_mode_updates_are_not_answer_text() -> None:
    t = UpdateTranslator(SID)
    assert t.update(text("agent_thought_chunk", "**Considering**\nthe request")) == []
    assert t.update(text("user_message_chunk", "an earlier prompt")) == []
    assert t.update(text("agent_message_chunk", "[MODE_UPDATE] autoEdit")) == []
    assert t.update(update("available_commands_update", availableCommands=[])) == []
    assert not t.answered
    assert t.mode_changes == ["autoEdit"]


def test_a_tool_call_and_its_completion_become_tool_events_named_like_stream_json() -> None:
    t = UpdateTranslator(SID)
    tool_id = "read_file__read_file_1796115884127_0"
    started = t.update(update("tool_call", toolCallId=tool_id, status="in_progress", kind="read", content=[]))
    done = t.update(update("tool_call_update", toolCallId=tool_id, status="completed", kind="read", content=[]))
    assert started == [ToolCall(tool_id=tool_id, name="read_file")]
    assert done == [ToolResult(tool_id=tool_id, ok=True, output="")]


def test_a_policy_denial_is_a_refused_tool_with_a_notice() -> None:
    t = UpdateTranslator(SID)
    tool_id = "write_file__write_file_1796115895279_0"
    message = 'Tool execution for "WriteFile" denied by policy.'
    events = t.update(
        update(
            "tool_call_update",
            toolCallId=tool_id,
            status="failed",
            kind="edit",
            content=[{"type": "content", "content": {"type": "text", "text": message}}],
        )
    )
    assert events[0] == ToolCall(tool_id=tool_id, name="write_file")
    assert events[1] == ToolResult(tool_id, ok=False, error_type="policy_violation", error_message=message)
    assert isinstance(events[2], RunNotice) and "write_file" in events[2].message
    assert folded(events).denied_actions == ["write_file"]


def test_a_refused_permission_is_a_denied_tool_result() -> None:
    t = UpdateTranslator(SID)
    call = {"toolCallId": "write_file__write_file_1_0", "kind": "edit", "title": "Writing to x.txt"}
    events = t.refused(call, "plan mode is read-only")
    assert events[0] == ToolCall(tool_id="write_file__write_file_1_0", name="write_file")
    assert isinstance(events[1], ToolResult) and events[1].error_type == "permission_denied"
    assert folded(events).denied_actions == ["write_file"]


def test_the_prompt_result_is_a_finished_event_with_usage() -> None:
    quota = {"token_count": {"input_tokens": 12, "output_tokens": 8}, "model_usage": []}
    finished = UpdateTranslator(SID).finished({"stopReason": "end_turn", "_meta": {"quota": quota}})
    assert finished.ok and finished.status == "SUCCESS" and not finished.partial
    assert finished.usage == Usage(input_tokens=12, output_tokens=8, total_tokens=20)
    assert finished.session_id == SID


def test_the_prompt_result_names_the_models_that_answered() -> None:
    quota = {"model_usage": [{"model": "gemini-2.5-flash", "token_count": {"input_tokens": 1}}, {"model": 7}]}
    finished = UpdateTranslator(SID).finished({"stopReason": "end_turn", "_meta": {"quota": quota}})
    assert finished.models == ("gemini-2.5-flash",)


def test_a_turn_cut_short_by_the_token_limit_is_finished_but_partial() -> None:
    finished = UpdateTranslator(SID).finished({"stopReason": "max_tokens"})
    assert finished.ok and finished.partial and finished.status == "MAX_TOKENS"


def test_tool_names_are_read_from_both_id_shapes_the_cli_generates() -> None:
    assert tool_name("read_file__read_file_1796115884127_0") == "read_file"
    assert tool_name("glob-1796115884127-3") == "glob"
    assert tool_name("opaque", "search") == "search"
