"""Gemini CLI `--output-format stream-json` lines -> neutral AgentEvents (pure; pinned by recorded transcripts)."""

from __future__ import annotations

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
from gemini_relay.streams.framing import NdjsonDecoder


class GeminiCliDecoder(NdjsonDecoder):
    """Feed stdout bytes; get events. Non-JSON lines (CLI warnings on stdout) are skipped and counted."""

    def _object(self, obj: dict[str, Any]) -> list[AgentEvent]:
        event = decode_event(obj)
        return [event] if event is not None else []


def decode_event(obj: dict[str, Any]) -> AgentEvent | None:
    """One stream-json object -> one event, or None for kinds that carry nothing for us (user echo, unknown)."""
    match obj.get("type"):
        case "init":
            return SessionStarted(session_id=_str(obj.get("session_id")), model=_opt_str(obj.get("model")))
        case "message":
            if obj.get("role") == "assistant":
                content = obj.get("content")
                return TextDelta(text=content if isinstance(content, str) else "")
            return None
        case "tool_use":
            params = obj.get("parameters")
            return ToolCall(
                tool_id=_str(obj.get("tool_id")),
                name=_str(obj.get("tool_name")),
                parameters=params if isinstance(params, dict) else {},  # pyright: ignore[reportUnknownArgumentType]
            )
        case "tool_result":
            error = _dict(obj.get("error"))
            return ToolResult(
                tool_id=_str(obj.get("tool_id")),
                ok=obj.get("status") == "success",
                output=_str(obj.get("output")),
                error_type=_opt_str(error.get("type")),
                error_message=_opt_str(error.get("message")),
            )
        case "error":
            return StreamNotice(message=_str(obj.get("message")), severity=_str(obj.get("severity")) or "error")
        case "result":
            return _finished(obj)
        case _:
            return None


def _finished(obj: dict[str, Any]) -> Finished:
    status = _str(obj.get("status")) or "unknown"
    error = _dict(obj.get("error"))
    response = obj.get("response")
    return Finished(
        ok=status == "success",
        status=status.upper(),
        text=response if isinstance(response, str) else None,
        error=_opt_str(error.get("message")),
        error_type=_opt_str(error.get("type")),
        usage=_usage(_dict(obj.get("stats"))),
    )


def _usage(stats: dict[str, Any]) -> Usage | None:
    if not stats:
        return None
    return Usage(
        input_tokens=_int(stats.get("input_tokens", stats.get("input"))),
        output_tokens=_int(stats.get("output_tokens")),
        thinking_tokens=_int(stats.get("thoughts_tokens", stats.get("thoughts"))),
        cached_tokens=_int(stats.get("cached")),
        total_tokens=_int(stats.get("total_tokens")),
    )


def _str(value: object) -> str:
    return value if isinstance(value, str) else ""


def _opt_str(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}  # pyright: ignore[reportUnknownVariableType]
