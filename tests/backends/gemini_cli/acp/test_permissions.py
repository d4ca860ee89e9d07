"""Permission requests are answered by the run's mode, restoring what headless `-p` allows."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gemini_relay.backends.asking import Option
from gemini_relay.backends.gemini_cli.acp.permissions import acp_mode, decide, in_session_folder, question_for
from gemini_relay.core.spec import RunSpec

OPTIONS = [
    {"optionId": "proceed_always", "kind": "allow_always"},
    {"optionId": "proceed_once", "kind": "allow_once"},
    {"optionId": "cancel", "kind": "reject_once"},
]


def request(kind: str) -> dict[str, Any]:
    return {"sessionId": "s", "options": OPTIONS, "toolCall": {"toolCallId": "t", "kind": kind, "title": "x"}}


@pytest.mark.parametrize(
    ("mode", "kind", "allowed"),
    [
        ("default", "read", True),
        ("default", "search", True),
        ("default", "edit", False),
        ("default", "execute", False),
        ("default", "fetch", False),
        ("plan", "edit", False),
        ("plan", "execute", False),
        ("plan", "read", True),
        ("autoEdit", "edit", True),
        ("autoEdit", "execute", False),
        ("yolo", "execute", True),
        ("yolo", "edit", True),
    ],
)
def test_each_mode_allows_what_the_headless_cli_allows(mode: str, kind: str, allowed: bool) -> None:
    verdict = decide(mode, request(kind))
    assert verdict.allow is allowed
    assert verdict.option_id == ("proceed_once" if allowed else "cancel")
    assert bool(verdict.reason) is not allowed


def test_allow_always_is_never_chosen_because_it_changes_the_session_mode() -> None:
    assert decide("yolo", request("edit")).option_id == "proceed_once"


def test_the_run_mode_maps_like_the_cold_approval_flags() -> None:
    spec = RunSpec(tool="t", prompt="p", cwd=__import__("pathlib").Path("/"))
    assert acp_mode(spec) == "default"
    assert acp_mode(RunSpec(tool="t", prompt="p", cwd=spec.cwd, mode="plan", skip_permissions=True)) == "plan"
    assert acp_mode(RunSpec(tool="t", prompt="p", cwd=spec.cwd, skip_permissions=True)) == "yolo"
    assert acp_mode(RunSpec(tool="t", prompt="p", cwd=spec.cwd, mode="accept-edits")) == "autoEdit"


def test_a_shell_request_becomes_a_question_quoting_its_command_line_and_the_offered_options() -> None:
    params = {**request("execute"), "toolCall": {"toolCallId": "t", "kind": "execute", "title": "touch ran.txt"}}
    question = question_for(params)
    assert question.title == "touch ran.txt (execute)"
    assert question.action == "touch ran.txt"
    assert [o.option_id for o in question.options] == ["proceed_always", "proceed_once", "cancel"]
    assert question.option("cancel") == Option("cancel", "cancel", "reject_once")


def test_an_edit_request_names_each_file_with_a_diff_summary() -> None:
    content = [
        {"type": "diff", "path": "/p/new.txt", "oldText": "", "newText": "a\nb\n"},
        {"type": "diff", "path": "/p/old.txt", "oldText": "a\nb\n", "newText": "a\nc\nd\n"},
    ]
    params = {
        **request("edit"),
        "toolCall": {"toolCallId": "t", "kind": "edit", "title": "Writing", "content": content},
    }
    assert question_for(params).action == "/p/new.txt: new file, 2 line(s)\n/p/old.txt: +2 -1 line(s)"


def test_a_shell_calls_details_name_the_sessions_folder_not_the_warm_processs(tmp_path: Path) -> None:
    home, project = tmp_path / "home", tmp_path / "proj"
    detail = f"[current working directory {home}] (list the files)"
    params = {
        "toolCall": {"title": "ls", "kind": "execute", "content": [{"type": "content", "content": {"text": detail}}]}
    }
    question = question_for(in_session_folder(params, home, project))
    assert f"[current working directory {project}]" in question.action and str(home) not in question.action
