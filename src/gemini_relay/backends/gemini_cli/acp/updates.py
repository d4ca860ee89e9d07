"""ACP `session/update` payloads and prompt results -> the neutral AgentEvents the stream-json decoder produces.

Pure: no I/O. Thoughts and replayed history carry no answer text; `[MODE_UPDATE] <mode>` chunks are the CLI's
own bookkeeping, not the model's words. Tool ids look like stream-json's (`read_file__read_file_<ms>_0`), so the
tool name is read from them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from gemini_relay.core.events import AgentEvent, Finished, RunNotice, TextDelta, ToolCall, ToolResult, Usage
from gemini_relay.streams.coerce import as_dict, as_int, as_str

MODE_UPDATE_PREFIX = "[MODE_UPDATE] "
# Stream-json maps these upstream stop reasons to a finished-but-cut-short run.
_STOP_STATUS = {"end_turn": "SUCCESS", "max_tokens": "MAX_TOKENS", "max_turn_requests": "MAX_TURNS"}
_GENERATED_ID = re.compile(r"^(?P<name>.+)-\d{10,}-\d+$")  # the CLI's own ids: `<name>-<ms>-<n>`
_DENIED_BY_POLICY = re.compile(r"denied by policy", re.IGNORECASE)


@dataclass
class UpdateTranslator:
    """Turns one prompt's updates into events. It keeps what translating needs: the tool calls seen (the CLI
    announces a call more than once, and a refusal names it), and whether any answer came; the answer's text and
    the refused actions are the run's record's, folded from these events where the run executes."""

    session_id: str
    mode_changes: list[str] = field(default_factory=list[str])
    answered: bool = False  # some answer text came (not only whitespace)
    _tools: dict[str, str] = field(default_factory=dict[str, str])
    _finished_tools: set[str] = field(default_factory=set[str])

    @property
    def tool_names(self) -> list[str]:
        """The tools the turn called, in order."""
        return list(self._tools.values())

    def update(self, params: dict[str, Any]) -> list[AgentEvent]:
        update = as_dict(params.get("update"))
        match update.get("sessionUpdate"):
            case "agent_message_chunk":
                text = _text_of(update.get("content"))
                if text.startswith(MODE_UPDATE_PREFIX):
                    self.mode_changes.append(text[len(MODE_UPDATE_PREFIX) :].strip())
                    return []
                if not text:
                    return []
                self.answered = self.answered or bool(text.strip())
                return [TextDelta(text)]
            case "tool_call":
                events = self._call(update)
                status = update.get("status")
                if status in ("completed", "failed"):
                    events += self._result(update)
                return events
            case "tool_call_update":
                if update.get("status") not in ("completed", "failed"):
                    return []
                return self._call(update) + self._result(update)
            case "current_mode_update":
                mode = update.get("currentModeId")
                if isinstance(mode, str):
                    self.mode_changes.append(mode)
                return []
            case _:  # agent_thought_chunk, user_message_chunk, plan, available_commands_update, ...
                return []

    def tool_call(self, tool_call: dict[str, Any]) -> list[AgentEvent]:
        """The call a permission request is about (the CLI sends no separate `tool_call` for it)."""
        return self._call(tool_call)

    def refused(self, tool_call: dict[str, Any], reason: str) -> list[AgentEvent]:
        events = self._call(tool_call)
        tool_id = as_str(tool_call.get("toolCallId"))
        self._finished_tools.add(tool_id)
        return [*events, ToolResult(tool_id=tool_id, ok=False, error_type="permission_denied", error_message=reason)]

    def finished(self, result: dict[str, Any]) -> Finished:
        stop = as_str(result.get("stopReason")) or "end_turn"
        status = _STOP_STATUS.get(stop, stop.upper())
        return Finished(
            ok=stop != "refusal",
            status=status,
            usage=_usage(result),
            session_id=self.session_id,
            partial=stop in ("max_tokens", "max_turn_requests"),
            models=_models(result),
        )

    def _call(self, update: dict[str, Any]) -> list[AgentEvent]:
        tool_id = as_str(update.get("toolCallId"))
        if not tool_id or tool_id in self._tools:
            return []
        name = tool_name(tool_id, as_str(update.get("kind")))
        self._tools[tool_id] = name
        return [ToolCall(tool_id=tool_id, name=name)]

    def _result(self, update: dict[str, Any]) -> list[AgentEvent]:
        tool_id = as_str(update.get("toolCallId"))
        if tool_id in self._finished_tools:
            return []
        self._finished_tools.add(tool_id)
        output = "\n".join(t for t in (_text_of(as_dict(c).get("content")) for c in _list(update.get("content"))) if t)
        if update.get("status") == "completed":
            return [ToolResult(tool_id=tool_id, ok=True, output=output)]
        error_type = "policy_violation" if _DENIED_BY_POLICY.search(output) else "execution_failed"
        result = ToolResult(tool_id=tool_id, ok=False, error_type=error_type, error_message=output or None)
        if error_type != "policy_violation":
            return [result]
        # The CLI's own policy refused it (plan mode): the caller is told, as for a refused permission.
        name = self._tools.get(tool_id, tool_id)
        return [result, RunNotice(f"Refused {name}: {output.rstrip('.')}.")]


def tool_name(tool_id: str, kind: str = "") -> str:
    """`read_file__read_file_1796_0` -> `read_file`; `glob-1796115884127-3` -> `glob`; else the ACP kind."""
    if "__" in tool_id:
        return tool_id.split("__", 1)[0]
    found = _GENERATED_ID.match(tool_id)
    if found:
        return found.group("name")
    return kind or tool_id


def _usage(result: dict[str, Any]) -> Usage | None:
    counts = as_dict(as_dict(as_dict(result.get("_meta")).get("quota")).get("token_count"))
    if not counts:
        return None
    inp, out = as_int(counts.get("input_tokens")), as_int(counts.get("output_tokens"))
    return Usage(input_tokens=inp, output_tokens=out, total_tokens=inp + out)


def _models(result: dict[str, Any]) -> tuple[str, ...]:
    usage = as_dict(as_dict(result.get("_meta")).get("quota")).get("model_usage")
    rows = [as_str(as_dict(row).get("model")) for row in usage] if isinstance(usage, list) else []
    return tuple(m for m in rows if m)


def _text_of(content: object) -> str:
    block = as_dict(content)
    return as_str(block.get("text")) if block.get("type") == "text" else ""


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []  # pyright: ignore[reportUnknownVariableType]
