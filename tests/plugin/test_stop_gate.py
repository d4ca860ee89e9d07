"""The stop-review gate on its own: opt-in, Gemini's verdict decides, a round cap that honours stop_hook_active, no
second review of an unchanged diff, a bounded wait, and a plain "Gemini unavailable: …, gate skipped" (never a block)
when the relay, its auth or its quota fail. The relay is the worktree's own, answering from the Gemini API emulator."""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from pathlib import Path

import pytest

from tests.git_repo import GitRepo
from tests.harness import TEST_MODEL, Relay
from tests.plugin.gate import PLUGIN, gate_env, run_gate

FINDINGS = "- critical: app.py:2 divides by zero when n is 0.\nVERDICT: BLOCK"


def changed_repo(relay: Relay) -> GitRepo:
    repo = GitRepo.create(relay.project, {"app.py": "def f(n):\n    return 1\n"})
    repo.write({"app.py": "def f(n):\n    return 1 / n\n", "notes.txt": "a new file @decorator\n"})
    return repo


def test_the_gate_is_off_unless_the_user_opts_in(tmp_path: Path) -> None:
    repo = GitRepo.create(tmp_path / "p", {"a.py": "x = 1\n"})
    repo.write({"a.py": "x = 2\n"})
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "GEMINI_RELAY_COMMAND": "/nonexistent/relay"}
    assert run_gate(env, repo.root) is None  # a started relay would have answered "Gemini unavailable"
    assert run_gate({**env, "CLAUDE_PLUGIN_OPTION_STOP_GATE": "off"}, repo.root) is None


def test_blocking_findings_send_claude_back_once_and_at_the_cap_stop_hook_active_lets_it_stop(relay: Relay) -> None:
    repo = changed_repo(relay)
    relay.api.set_scenario("echo", FINDINGS)
    env = gate_env(relay, GEMINI_RELAY_GATE_EFFORT="low")
    answer = run_gate(env, relay.project)
    assert answer is not None and answer["decision"] == "block", answer
    assert "app.py:2 divides by zero" in answer["reason"]
    assert f"({TEST_MODEL}, effort low; round 1 of 1)" in answer["reason"]
    (request,) = relay.turn_requests()
    assert request.model == TEST_MODEL  # pinned, not the relay's default
    sent = json.dumps(request.body)
    assert "return 1 / n" in sent and "new untracked file notes.txt" in sent
    assert "\\\\@decorator" in sent  # an @ in the diff is not read as a file reference by the relay
    repo.write({"app.py": "def f(n):\n    return 1 / n if n else 0\n"})  # Claude's fix
    again = run_gate(env, relay.project, active=True)
    assert again == {"systemMessage": "Gemini stop-review: 1 round(s) this turn, the cap; not reviewing again."}
    assert len(relay.turn_requests()) == 1


def test_a_raised_cap_reviews_the_fix_and_stops_at_the_cap(relay: Relay) -> None:
    repo = changed_repo(relay)
    relay.api.set_scenario("echo", FINDINGS)
    env = gate_env(relay, GEMINI_RELAY_GATE_ROUNDS="2")
    assert run_gate(env, relay.project)["decision"] == "block"  # type: ignore[index]
    repo.write({"app.py": "def f(n):\n    return 1 / n if n else 0\n"})
    second = run_gate(env, relay.project, active=True)
    assert second is not None and "round 2 of 2" in second["reason"]
    repo.write({"app.py": "def f(n):\n    return 0 if not n else 1 / n\n"})
    third = run_gate(env, relay.project, active=True)
    assert third == {"systemMessage": "Gemini stop-review: 2 round(s) this turn, the cap; not reviewing again."}
    assert len(relay.turn_requests()) == 2
    # The next user turn (stop_hook_active false) starts a new count and reviews again.
    repo.write({"app.py": "def f(n):\n    return n\n"})
    assert run_gate(env, relay.project)["decision"] == "block"  # type: ignore[index]


def test_a_pass_verdict_lets_the_turn_end_and_an_unchanged_diff_or_clean_tree_is_not_reviewed(relay: Relay) -> None:
    repo = changed_repo(relay)
    relay.api.set_scenario("echo", "- suggestion: a.py:1 a docstring would help.\nVERDICT: PASS")
    env = gate_env(relay)
    assert run_gate(env, relay.project) == {"systemMessage": f"Gemini stop-review passed ({TEST_MODEL}, effort high)."}
    assert run_gate(env, relay.project) is None  # the next turn changed nothing: no quota spent
    repo.commit()
    assert run_gate(env, relay.project) is None
    assert len(relay.turn_requests()) == 1


def test_quota_exhaustion_skips_the_gate_with_the_reason_instead_of_blocking(relay: Relay) -> None:
    changed_repo(relay)
    relay.api.set_scenario("quota")
    answer = run_gate(gate_env(relay), relay.project)
    assert answer is not None and set(answer) == {"systemMessage"}, answer
    message = answer["systemMessage"]
    assert message.startswith("Gemini unavailable: ") and message.endswith(", gate skipped")
    assert "quota" in message.lower() or "capacity" in message.lower(), message


def test_outside_a_git_work_tree_there_is_nothing_to_review(tmp_path: Path) -> None:
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "GEMINI_RELAY_STOP_GATE": "on",
        "GEMINI_RELAY_COMMAND": "/nonexistent/relay",
    }
    assert run_gate(env, tmp_path) is None


def test_a_missing_relay_skips_the_gate_with_the_reason(tmp_path: Path) -> None:
    repo = GitRepo.create(tmp_path / "p", {"a.py": "x = 1\n"})
    repo.write({"a.py": "x = 2\n"})
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "GEMINI_RELAY_STOP_GATE": "on",
        "GEMINI_RELAY_COMMAND": str(tmp_path / "no-such-relay"),
    }
    answer = run_gate(env, repo.root)
    assert answer is not None
    message = answer["systemMessage"]
    assert message.startswith("Gemini unavailable: the relay exited (127) before answering: "), message
    assert "no-such-relay" in message and message.endswith(", gate skipped")


def test_a_relay_that_never_answers_is_stopped_at_the_gate_timeout_and_the_gate_skipped(tmp_path: Path) -> None:
    repo = GitRepo.create(tmp_path / "p", {"a.py": "x = 1\n"})
    repo.write({"a.py": "x = 2\n"})
    pid_file = tmp_path / "mute.pid"
    mute = tmp_path / "mute-relay"  # reads MCP requests and never answers
    mute.write_text(
        f"#!{sys.executable}\nimport os, sys, pathlib\npathlib.Path({str(pid_file)!r}).write_text("
        "str(os.getpid()))\nfor _ in sys.stdin: pass\nimport time\ntime.sleep(3600)\n",
        encoding="utf-8",
    )
    mute.chmod(0o755)
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "GEMINI_RELAY_STOP_GATE": "on",
        "GEMINI_RELAY_COMMAND": str(mute),
        "GEMINI_RELAY_GATE_TIMEOUT": "1",
    }
    answer = run_gate(env, repo.root)
    assert answer == {"systemMessage": "Gemini unavailable: no answer within the gate's timeout, gate skipped"}
    pid = int(pid_file.read_text(encoding="utf-8"))
    assert not Path(f"/proc/{pid}").exists() or _zombie(pid), "the mute relay was left running"


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_bytes().rpartition(b")")[2].split()[0] in (b"Z", b"X")
    except OSError:
        return True


@pytest.mark.parametrize(
    ("variable", "value"),
    [("GEMINI_RELAY_GATE_ROUNDS", "9"), ("GEMINI_RELAY_GATE_EFFORT", "max"), ("GEMINI_RELAY_STOP_GATE", "maybe")],
)
def test_a_bad_setting_skips_the_gate_naming_it(tmp_path: Path, variable: str, value: str) -> None:
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "GEMINI_RELAY_STOP_GATE": "on", variable: value}
    answer = run_gate(env, tmp_path)
    assert answer is not None and f"{variable}={value!r}" in answer["systemMessage"], answer
    assert answer["systemMessage"].endswith("; gate skipped")


def test_the_gate_defaults_are_the_plugin_settings_defaults() -> None:
    manifest = json.loads((PLUGIN / ".claude-plugin" / "plugin.json").read_text(encoding="utf-8"))
    declared = {key: str(field["default"]) for key, field in manifest["userConfig"].items()}
    spec = importlib.util.spec_from_file_location("stop_gate", PLUGIN / "hooks" / "stop_gate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["stop_gate"] = module  # its dataclasses look their module up
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules["stop_gate"]
    assert declared == module.DEFAULTS
