"""Answers to `session/request_permission`, by the run's mode, matching what the cold `-p` path allows.

Headless `-p` offers only read-only tools in default mode, adds edits (and web_fetch) with auto_edit, and everything
with yolo (gemini-cli.md §8.2); ACP default mode offers every tool and asks instead, so the answer restores the
headless line. Never `allow_always`: it switches the whole session's mode.
"""

from __future__ import annotations

import contextlib
import difflib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from gemini_relay.backends.asking import Answer, AskOutcome, Option, Question, current_asker
from gemini_relay.backends.gemini_cli.acp.connection import AcpConnection, AcpConnectionLost
from gemini_relay.backends.gemini_cli.acp.updates import UpdateTranslator
from gemini_relay.core.events import AgentEvent, RunNotice
from gemini_relay.core.spec import RunSpec
from gemini_relay.streams.coerce import as_dict, as_list, as_str

READ_ONLY_KINDS = frozenset({"read", "search", "think"})
EDIT_KINDS = frozenset({"edit", "delete", "move"})
MAX_ACTION_CHARS = 2000  # what a question quotes of the action: a whole new file is summarised, not pasted


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


_CWD_DETAIL = "[current working directory {}]"


def in_session_folder(params: dict[str, Any], process_cwd: Path, session_cwd: Path) -> dict[str, Any]:
    """`params` with the folder a shell call's details name set to the session's. The CLI 0.61.0 writes its own
    process's folder there (ShellToolInvocation.getContextualDetails: `process.cwd()`), while the command runs in
    the session's (getTargetDir()): a warm process serves every project from one folder, the CLI home."""
    wrong = {_CWD_DETAIL.format(p) for p in (process_cwd, process_cwd.resolve())} - {_CWD_DETAIL.format(session_cwd)}
    return _replaced(params, wrong, _CWD_DETAIL.format(session_cwd))  # type: ignore[no-any-return]


def _replaced(value: Any, wrong: set[str], right: str) -> Any:
    if isinstance(value, str):
        for text in wrong:
            value = value.replace(text, right)
        return value
    if isinstance(value, dict):
        return {k: _replaced(v, wrong, right) for k, v in value.items()}  # pyright: ignore[reportUnknownVariableType]
    if isinstance(value, list):
        return [_replaced(v, wrong, right) for v in value]  # pyright: ignore[reportUnknownVariableType]
    return value


def describe_call(params: dict[str, Any]) -> str:
    tool_call = params.get("toolCall")
    if isinstance(tool_call, dict):
        title = tool_call.get("title")  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
        kind = tool_call.get("kind")  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
        if isinstance(title, str) and title:
            return f"{title} ({kind})" if isinstance(kind, str) else title
    return "a tool call"


def question_for(params: dict[str, Any]) -> Question:
    """The request as a person reads it: the exact action (the command line, each file with a diff summary) and
    the options the CLI offered, in its order."""
    tool_call: dict[str, Any] = as_dict(params.get("toolCall"))
    title = as_str(tool_call.get("title")) or "a tool call"
    options = tuple(
        Option(as_str(o.get("optionId")), as_str(o.get("name")) or as_str(o.get("optionId")), as_str(o.get("kind")))
        for o in (as_dict(raw) for raw in as_list(params.get("options")))
        if as_str(o.get("optionId"))
    )
    return Question(title=f"{title} ({as_str(tool_call.get('kind')) or 'other'})", action=_action(tool_call),
                    options=options)  # fmt: skip


def _action(tool_call: dict[str, Any]) -> str:
    lines: list[str] = []
    for block in (as_dict(raw) for raw in as_list(tool_call.get("content"))):
        if block.get("type") == "diff":
            old, new = as_str(block.get("oldText")), as_str(block.get("newText"))
            lines.append(f"{as_str(block.get('path'))}: {_diff_summary(old, new)}")
        elif block.get("type") == "content":
            text = as_str(as_dict(block.get("content")).get("text"))
            if text:
                lines.append(text)
    if not lines:  # a shell call carries its command line as the title; the locations name the files
        lines.append(as_str(tool_call.get("title")) or "a tool call")
        lines += [f"at {as_str(as_dict(loc).get('path'))}" for loc in as_list(tool_call.get("locations"))]
    return "\n".join(lines)[:MAX_ACTION_CHARS]


def _diff_summary(old: str, new: str) -> str:
    if not old:
        return f"new file, {len(new.splitlines())} line(s)"
    diff = list(difflib.unified_diff(old.splitlines(), new.splitlines(), lineterm="", n=0))
    added = sum(1 for line in diff if line.startswith("+") and not line.startswith("+++"))
    removed = sum(1 for line in diff if line.startswith("-") and not line.startswith("---"))
    return f"+{added} -{removed} line(s)"


async def answer_permission(
    connection: AcpConnection,
    request_id: int | str | None,
    params: dict[str, Any],
    mode: str,
    translator: UpdateTranslator,
    deadline: float,
) -> list[AgentEvent]:
    """Answer one `session/request_permission` (by the policy, or by the user through the client) and say what
    the run's events show of it."""
    verdict, notice = await _decide(mode, params, deadline)
    tool_call = params.get("toolCall")
    call: dict[str, object] = tool_call if isinstance(tool_call, dict) else {}  # pyright: ignore[reportUnknownVariableType]
    with contextlib.suppress(AcpConnectionLost):  # a dead child shows up as `closed` next
        await connection.respond(request_id, {"outcome": {"outcome": "selected", "optionId": verdict.option_id}})
    notices = [RunNotice(notice)] if notice else []
    if verdict.allow:
        return [*translator.tool_call(call), *notices]
    return [*translator.refused(call, verdict.reason), *notices]


async def _decide(mode: str, params: dict[str, Any], deadline: float) -> tuple[Verdict, str]:
    """The policy's verdict, or the user's where the policy would refuse and the caller can be asked; and the
    notice that says which decided. Plan mode is read-only by contract: it is never asked."""
    verdict = decide(mode, params)
    what = describe_call(params)
    if verdict.allow:
        return verdict, ""
    if mode == "plan":
        return verdict, f"Refused {what}: {verdict.reason}."
    asker = current_asker()
    question = question_for(params)
    answer = Answer(AskOutcome.TIMED_OUT)
    with anyio.move_on_after(max(deadline - anyio.current_time(), 0)):
        answer = await asker.ask(question)
    chosen = question.option(answer.option_id) if answer.option_id else None
    if answer.outcome is AskOutcome.ANSWERED and chosen is not None:
        if chosen.allows:
            return Verdict(
                True, chosen.option_id
            ), f"The user allowed {what} ({chosen.name}), asked through the client."
        reason = "the user refused it"
        return Verdict(
            False, chosen.option_id, reason
        ), f"Refused {what}: {reason} ({chosen.name}), asked through the client."
    why = answer.outcome.describe(asker.timeout)
    return verdict, f"Refused {what}: {verdict.reason} (decided by the call's policy: {why})."
