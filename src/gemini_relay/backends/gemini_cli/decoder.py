"""Gemini CLI `--output-format stream-json` lines -> neutral AgentEvents (pure; pinned by recorded transcripts)."""

from __future__ import annotations

import json
import re
from typing import Any

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
from gemini_relay.streams.coerce import as_dict, as_int, as_opt_str, as_str
from gemini_relay.streams.framing import NdjsonDecoder

# Node drops piped stdout still unwritten when the CLI exits: past the 64 KiB pipe buffer, the end of the stream
# (the rest of one huge event, the result event) is lost. Measured on 0.61.0: a 200 KB answer event is cut at
# exactly 65,536 bytes of stdout; a 70 KB one arrives whole but the result event after it does not.
PIPE_CUT_BYTES = 64 * 1024
# How 0.61.0 writes an answer event, up to its text: {"type":"message","timestamp":"…","role":"assistant","content":"
_CUT_MESSAGE = re.compile(r'\{"type":"message",(?:"timestamp":"[^"]*",)?"role":"assistant","content":"')


class GeminiCliDecoder(NdjsonDecoder):
    """Feed stdout bytes; get events. Non-JSON lines (CLI warnings on stdout) are skipped and counted."""

    def __init__(self) -> None:
        super().__init__()
        self.stdout_bytes = 0
        self.cut_line_bytes: int | None = None  # a final line without its newline that did not parse

    def push(self, chunk: bytes) -> list[AgentEvent]:
        self.stdout_bytes += len(chunk)
        return super().push(chunk)

    def flush(self) -> list[AgentEvent]:
        pending, skipped = self._framer.pending, self.skipped
        if not pending:
            return super().flush()
        line = self._framer.flush()[0]
        events = self._lines([line])
        if self.skipped > skipped:
            self.cut_line_bytes = pending
            salvaged = salvage_cut_text(line)
            if salvaged:
                events.append(TextDelta(text=salvaged))
        return events

    def truncation(self) -> str | None:
        """Why the stream may have ended early: the CLI's 64 KiB pipe cut, when the output reached it."""
        if self.stdout_bytes < PIPE_CUT_BYTES:
            return None
        where = (
            f"its last event was cut off after {self.cut_line_bytes:,} bytes"
            if self.cut_line_bytes is not None
            else "the events after it were lost"
        )
        return (
            f"the Gemini CLI's output stopped at {self.stdout_bytes:,} bytes and {where}: piped, the CLI drops "
            "what it has not written past 64 KiB when it exits, so one very large answer event loses the end of "
            "the stream. Ask for a shorter answer (maxResponseLength) or split the task"
        )

    def _object(self, obj: dict[str, Any]) -> list[AgentEvent]:
        event = decode_event(obj)
        return [event] if event is not None else []


def salvage_cut_text(line: str) -> str | None:
    """The answer text in an assistant message event cut mid-string, as far as it got; None for anything else."""
    match = _CUT_MESSAGE.match(line)
    if match is None:
        return None
    body = line[match.end() :]
    for trim in range(7):  # a cut can split an escape (`\\u00e9` is six characters)
        try:
            text = json.loads('"' + body[: len(body) - trim] + '"')
        except ValueError:
            continue
        return text if isinstance(text, str) and text else None
    return None


def decode_event(obj: dict[str, Any]) -> AgentEvent | None:
    """One stream-json object -> one event, or None for kinds that carry nothing for us (user echo, unknown)."""
    match obj.get("type"):
        case "init":
            return SessionStarted(session_id=as_str(obj.get("session_id")), model=as_opt_str(obj.get("model")))
        case "message":
            if obj.get("role") == "assistant":
                content = obj.get("content")
                return TextDelta(text=content if isinstance(content, str) else "")
            return None
        case "tool_use":
            params = obj.get("parameters")
            return ToolCall(
                tool_id=as_str(obj.get("tool_id")),
                name=as_str(obj.get("tool_name")),
                parameters=params if isinstance(params, dict) else {},  # pyright: ignore[reportUnknownArgumentType]
            )
        case "tool_result":
            error = as_dict(obj.get("error"))
            return ToolResult(
                tool_id=as_str(obj.get("tool_id")),
                ok=obj.get("status") == "success",
                output=as_str(obj.get("output")),
                error_type=as_opt_str(error.get("type")),
                error_message=as_opt_str(error.get("message")),
            )
        case "error":
            return StreamNotice(message=as_str(obj.get("message")), severity=as_str(obj.get("severity")) or "error")
        case "result":
            return _finished(obj)
        case _:
            return None


def _finished(obj: dict[str, Any]) -> Finished:
    status = as_str(obj.get("status")) or "unknown"
    error = as_dict(obj.get("error"))
    response = obj.get("response")
    return Finished(
        ok=status == "success",
        status=status.upper(),
        text=response if isinstance(response, str) else None,
        error=as_opt_str(error.get("message")),
        error_type=as_opt_str(error.get("type")),
        usage=_usage(as_dict(obj.get("stats"))),
        models=tuple(as_dict(as_dict(obj.get("stats")).get("models"))),
    )


def _usage(stats: dict[str, Any]) -> Usage | None:
    if not stats:
        return None
    return Usage(
        input_tokens=as_int(stats.get("input_tokens", stats.get("input"))),
        output_tokens=as_int(stats.get("output_tokens")),
        thinking_tokens=as_int(stats.get("thoughts_tokens", stats.get("thoughts"))),
        cached_tokens=as_int(stats.get("cached")),
        total_tokens=as_int(stats.get("total_tokens")),
    )
