"""RunSpec: everything a backend needs to start one run, validated before a job exists."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class RunSpec:
    """Everything a backend needs to start one run. `explicit` names the options the caller set on purpose."""

    tool: str
    prompt: str
    cwd: Path
    model: str | None = None
    effort: str | None = None
    mode: str | None = None  # "plan" | "accept-edits"
    json_schema: dict[str, Any] | None = None
    add_dirs: tuple[Path, ...] = ()
    conversation_id: str | None = None
    session_id: str | None = None  # a fresh run's id chosen up front, for backends that accept one (Gemini CLI)
    agent: str | None = None
    allow_slash_commands: bool = False
    skip_permissions: bool = False
    sandbox: bool = False
    timeout_seconds: float = 45 * 60.0
    explicit: frozenset[str] = frozenset()
