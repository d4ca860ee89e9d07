"""Answers to `session/request_permission`, by the run's mode, matching what the cold `-p` path allows.

Headless `-p` offers only read-only tools in default mode, adds edits (and web_fetch) with auto_edit, and everything
with yolo (gemini-cli.md §8.2); ACP default mode offers every tool and asks instead, so the answer restores the
headless line. Never `allow_always`: it switches the whole session's mode.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gemini_relay.core.spec import RunSpec

READ_ONLY_KINDS = frozenset({"read", "search", "think"})
EDIT_KINDS = frozenset({"edit", "delete", "move"})


@dataclass(frozen=True)
class Verdict:
    allow: bool
    option_id: str
    reason: str = ""  # why a refusal happened, for the caller's notice


def acp_mode(spec: RunSpec) -> str:
    """The ACP session mode for a run: `plan`, `autoEdit`, `yolo` or `default` (like gemini_cli/args.py _approval)."""
    if spec.mode == "plan":
        return "plan"
    if spec.skip_permissions:
        return "yolo"
    if spec.mode == "accept-edits":
        return "autoEdit"
    return "default"


def decide(mode: str, params: dict[str, Any]) -> Verdict:
    tool_call = params.get("toolCall") if isinstance(params.get("toolCall"), dict) else {}
    assert isinstance(tool_call, dict)
    kind = str(tool_call.get("kind") or "other")  # pyright: ignore[reportUnknownArgumentType, reportUnknownMemberType]
    options: list[Any] = params.get("options") if isinstance(params.get("options"), list) else []  # type: ignore[assignment]
    allowed, why = _allowed(mode, kind)
    if allowed:
        return Verdict(True, _option(options, "allow_once", "proceed_once"))
    return Verdict(False, _option(options, "reject_once", "cancel"), why)


def _allowed(mode: str, kind: str) -> tuple[bool, str]:
    if mode == "yolo" or kind in READ_ONLY_KINDS:
        return True, ""
    if mode == "plan":
        return False, "plan mode is read-only"
    if mode == "autoEdit":
        if kind in EDIT_KINDS or kind == "fetch":
            return True, ""
        return False, "mode accept-edits allows file edits but not shell commands; pass skipPermissions to allow it"
    return False, "only read-only tools run without mode accept-edits or skipPermissions"


def _option(options: list[Any], kind: str, fallback: str) -> str:
    for option in options:
        if isinstance(option, dict) and option.get("kind") == kind and isinstance(option.get("optionId"), str):  # pyright: ignore[reportUnknownMemberType]
            return str(option["optionId"])  # pyright: ignore[reportUnknownArgumentType]
    return fallback


def describe_call(params: dict[str, Any]) -> str:
    tool_call = params.get("toolCall")
    if isinstance(tool_call, dict):
        title = tool_call.get("title")  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
        kind = tool_call.get("kind")  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
        if isinstance(title, str) and title:
            return f"{title} ({kind})" if isinstance(kind, str) else title
    return "a tool call"
