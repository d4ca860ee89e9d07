"""The plugin's stop-review gate run as Claude Code runs it: `python3 stop_gate.py`, the hook JSON on stdin, its
answer (JSON or nothing) on stdout. Shared by the gate's own tests and the real-Claude-Code ones."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from tests.executables import python_child
from tests.harness import REPO, TEST_MODEL, Relay

PLUGIN = REPO / "plugins" / "gemini-relay"
GATE = PLUGIN / "hooks" / "stop_gate.py"
RELAY_COMMAND = Path(sys.executable).parent / "gemini-relay"  # the worktree's own console script
GATE_TIMEOUT = 120.0


def gate_env(relay: Relay, **settings: str) -> dict[str, str]:
    """The world's env with the gate on, its relay the worktree's console script on the api backend (the emulator),
    the model pinned to one the emulator serves; `settings` override any of it."""
    return {
        **relay.env,
        "GEMINI_MCP_BACKEND": "api",
        "GEMINI_RELAY_COMMAND": str(RELAY_COMMAND),
        "GEMINI_RELAY_STOP_GATE": "on",
        "GEMINI_RELAY_HOST": "off",  # the server runs the review itself: no shared host to start in each test
        "GEMINI_RELAY_GATE_MODEL": TEST_MODEL,
        "XDG_STATE_HOME": str(relay.base / "gate-state"),
        **settings,
    }


def run_gate(env: dict[str, str], cwd: Path, *, active: bool = False, session: str = "s-1") -> dict[str, Any] | None:
    """One Stop of session `session` (`active`: stop_hook_active); the gate's JSON answer, or None when silent."""
    hook = {
        "session_id": session,
        "transcript_path": "/dev/null",
        "cwd": str(cwd),
        "hook_event_name": "Stop",
        "stop_hook_active": active,
    }
    done = python_child(str(GATE), env=env, cwd=cwd, stdin=json.dumps(hook), timeout=GATE_TIMEOUT)
    assert done.returncode == 0, done.stderr
    if not done.stdout.strip():
        return None
    answer: dict[str, Any] = json.loads(done.stdout)
    return answer
