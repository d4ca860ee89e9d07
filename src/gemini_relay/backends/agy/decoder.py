"""agy `--output-format stream-json` lines -> neutral AgentEvents (pure; pinned by transcripts built from agy.md §2).

Each line is `{"event": <kind>, <kind>: {...}}`. `init` names the conversation, every `agent_response` step's
`text_delta` is a piece of the answer (concatenated in arrival order, never deduplicated by step_index: MEASURED
1.1.15), and `result` is the turn's verdict. Blank lines are ignored; undecodable and over-long lines are counted.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from gemini_relay.core.events import AgentEvent, Finished, SessionStarted, StepChanged, TextDelta, Usage
from gemini_relay.streams.coerce import as_dict, as_int, as_opt_str, as_str
from gemini_relay.streams.framing import NdjsonDecoder

_DENIED_NAME_KEYS = ("tool_name", "tool", "name", "action")


class AgyDecoder(NdjsonDecoder):
    """Feed stdout bytes; get events.

    Beyond the per-line mapping it keeps four bits of run state: the conversation id (so a stream whose `init` was
    lost still names its conversation from a later event), the thinking and cache-read tokens the steps reported
    (agy 1.1.8's result usage lacks them), whether any text streamed (an empty `response` then defers to it), and
    the step the run is on (a StepChanged when its index or type changes, not once per delta).
    """

    def __init__(self) -> None:
        super().__init__()
        self._conversation_id: str | None = None
        self._step_thinking = 0
        self._step_cache_read = 0
        self._streamed = False
        self._step: tuple[object, str] | None = None

    @property
    def conversation_id(self) -> str | None:
        return self._conversation_id

    def _object(self, obj: dict[str, Any]) -> list[AgentEvent]:
        events: list[AgentEvent] = []
        kind = obj.get("event")
        payload = as_dict(obj.get(kind)) if isinstance(kind, str) else {}
        event = decode_event(obj)
        if self._conversation_id is None and not isinstance(event, SessionStarted):
            # agy-mcp reads the id from any event kind: a late or missing init must not lose the conversation.
            seen = as_str(payload.get("conversation_id"))
            if seen:
                self._conversation_id = seen
                events.append(SessionStarted(session_id=seen))
        if kind == "step_update":
            usage = as_dict(payload.get("usage"))
            self._step_thinking += as_int(usage.get("thinking_tokens"))
            self._step_cache_read += as_int(usage.get("cache_read_tokens"))
            step_type = as_str(payload.get("step_type"))
            if step_type and (payload.get("step_index"), step_type) != self._step:
                self._step = (payload.get("step_index"), step_type)
                events.append(StepChanged(step_type))
        match event:
            case SessionStarted(session_id=sid) if sid:
                self._conversation_id = self._conversation_id or sid
            case TextDelta():
                self._streamed = True
            case Finished():
                event = self._complete(event, payload)
            case _:
                pass
        if event is not None:
            events.append(event)
        return events

    def _complete(self, finished: Finished, payload: dict[str, Any]) -> Finished:
        usage = finished.usage
        raw_usage = as_dict(payload.get("usage"))
        if usage is not None:
            if "thinking_tokens" not in raw_usage and self._step_thinking:
                usage = replace(usage, thinking_tokens=self._step_thinking)
            if "cache_read_tokens" not in raw_usage and self._step_cache_read:
                usage = replace(usage, cached_tokens=self._step_cache_read)
        text = finished.text
        if text == "" and self._streamed:
            text = None  # a print-timeout SUCCESS can carry an empty response after partial deltas: keep the deltas
        return replace(finished, text=text, usage=usage, session_id=finished.session_id or self._conversation_id)


def decode_event(obj: dict[str, Any]) -> AgentEvent | None:
    """One stream-json object -> one event, or None for kinds that carry nothing for us (user input, tool steps)."""
    kind = obj.get("event")
    if not isinstance(kind, str):
        return None
    payload = as_dict(obj.get(kind))
    match kind:
        case "init":
            # The only event with a top-level conversation_id; a failure before a conversation exists sends "".
            sid = as_str(obj.get("conversation_id")) or as_str(payload.get("conversation_id"))
            return SessionStarted(session_id=sid, model=as_opt_str(payload.get("model"))) if sid else None
        case "step_update":
            delta = payload.get("text_delta")
            if payload.get("step_type") == "agent_response" and isinstance(delta, str) and delta:
                return TextDelta(text=delta)
            return None
        case "result":
            return _finished(payload)
        case _:
            return None


def _finished(result: dict[str, Any]) -> Finished:
    status = as_str(result.get("status"))
    response = result.get("response")
    text = response.rstrip("\n") if isinstance(response, str) else None
    return Finished(
        ok=status == "SUCCESS",
        status=status,
        text=text,
        error=as_opt_str(result.get("error")),
        usage=_usage(result.get("usage")),
        num_turns=_opt_int(result.get("num_turns")),
        structured_output=result.get("structured_output"),
        has_structured_output="structured_output" in result,
        denied_actions=tuple(_denied(result.get("denied_actions"))),
        session_id=as_opt_str(result.get("conversation_id")),
    )


def _usage(raw: object) -> Usage | None:
    usage = as_dict(raw)
    if not usage:
        return None
    return Usage(
        input_tokens=as_int(usage.get("input_tokens")),
        output_tokens=as_int(usage.get("output_tokens")),
        thinking_tokens=as_int(usage.get("thinking_tokens")),
        cached_tokens=as_int(usage.get("cache_read_tokens")),
        total_tokens=as_int(usage.get("total_tokens")),
    )


def _denied(raw: object) -> list[str]:
    """`denied_actions` is [3P] and its entry shape unmeasured: strings pass through, objects name their tool."""
    if not isinstance(raw, list):
        return []
    names: list[str] = []
    for item in raw:  # pyright: ignore[reportUnknownVariableType]
        if isinstance(item, str) and item:
            names.append(item)
        elif isinstance(item, dict):
            entry: dict[str, Any] = item  # pyright: ignore[reportUnknownVariableType]
            named = next((entry[k] for k in _DENIED_NAME_KEYS if isinstance(entry.get(k), str) and entry[k]), None)
            names.append(named or json.dumps(entry, ensure_ascii=False, sort_keys=True))
    return names


def _opt_int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
