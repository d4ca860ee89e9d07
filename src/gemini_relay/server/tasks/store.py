"""Where MCP tasks live on disk, beside the jobs: one JSON record per task and one lock file.

A task is a tool call answered later. Its record holds what is needed to answer it in any server process: the tool,
its arguments, the jobs its runs became, and, once known, the exact CallToolResult. The server running a task holds
its lock for as long as it runs it, so a lock anyone can take means the task's server is gone and the task may be
resumed (its jobs run on without it).
"""

from __future__ import annotations

import contextlib
import json
import re
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from gemini_relay.core.trusted_files import OTHERS_WRITE, load_trusted_json, write_file
from gemini_relay.jobs.store.locks import try_lock_file

TASKS_DIR = "tasks"
# input_required: waiting for the client's answers (tasks/update); failed: a protocol-level error, not a tool's
TaskState = Literal["working", "input_required", "completed", "failed", "cancelled"]
TERMINAL: frozenset[str] = frozenset({"completed", "failed", "cancelled"})
_TASK_ID = re.compile(r"[0-9a-f]{8,64}")  # job ids are hex; anything else cannot name a task (nor a path)


@dataclass
class TaskEntry:
    task_id: str
    tool: str
    arguments: dict[str, Any]
    created_at: float  # wall clock
    updated_at: float
    jobs: list[str] = field(default_factory=list[str])  # in the order the call started them
    status: TaskState = "working"
    result: dict[str, Any] | None = None  # the CallToolResult, as on the wire
    cancel_requested: bool = False
    error: dict[str, Any] | None = None  # a failed task's JSON-RPC error (code, message, data)
    input_requests: dict[str, Any] | None = None  # what an input_required task waits for, keyed as asked

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TaskEntry:
        return cls(
            task_id=str(data["task_id"]),
            tool=str(data["tool"]),
            arguments=dict(data.get("arguments") or {}),
            created_at=float(data["created_at"]),
            updated_at=float(data.get("updated_at") or data["created_at"]),
            jobs=[str(j) for j in data.get("jobs") or []],
            status=data.get("status", "working"),
            result=data.get("result"),
            cancel_requested=bool(data.get("cancel_requested", False)),
            error=data.get("error"),
            input_requests=data.get("input_requests"),
        )

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL


class TaskStore:
    def __init__(self, state_dir: Path) -> None:
        self.root = state_dir / TASKS_DIR
        self.root.mkdir(parents=True, exist_ok=True, mode=0o700)

    def _path(self, task_id: str, suffix: str = ".json") -> Path | None:
        return self.root / f"{task_id}{suffix}" if _TASK_ID.fullmatch(task_id) else None

    def save(self, entry: TaskEntry) -> None:
        path = self._path(entry.task_id)
        assert path is not None, "task ids are job ids"
        entry.updated_at = time.time()
        write_file(path, json.dumps(entry.to_json(), ensure_ascii=False).encode("utf-8"), private=True, durable=True)

    def load(self, task_id: str) -> TaskEntry | None:
        path = self._path(task_id)
        if path is None:
            return None
        # Someone else's record would choose the tool and arguments this server runs: ignored, like a corrupt one.
        data = load_trusted_json(path, what="the task record", mask=OTHERS_WRITE)  # older ones: umask modes
        try:
            return TaskEntry.from_json(data) if data is not None else None
        except (ValueError, KeyError, TypeError):
            return None

    def ids(self) -> list[str]:
        return [p.stem for p in self.root.glob("*.json") if _TASK_ID.fullmatch(p.stem)]

    def delete(self, task_id: str) -> None:
        for suffix in (".json", ".lock"):
            path = self._path(task_id, suffix)
            if path is not None:
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()

    def try_lock(self, task_id: str) -> int | None:
        """An open descriptor holding the task's lock, or None while a live server holds it. Close-on-exec, so
        supervisors never inherit it; it dies with its process, which is what makes it a liveness signal."""
        path = self._path(task_id, ".lock")
        if path is None:
            return None
        return try_lock_file(path)
