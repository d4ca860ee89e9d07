"""The Gemini CLI's saved sessions (`.gemini/tmp/<slug>/chats/session-*.jsonl`) as conversation summaries."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from gemini_relay.backends.capabilities import Conversation

FIRST_PROMPT_CHARS = 80
_MAX_LINES_SCANNED = 200  # the first user message is near the top; never read a whole long session
_TAIL_BYTES = 64 * 1024  # `$set` patches are appended as the session goes on: the latest is near the end


def list_conversations(home: Path, limit: int) -> list[Conversation]:
    """Newest first. Unreadable or half-written files are skipped, never fatal."""
    root = home / ".gemini" / "tmp"
    if not root.is_dir():
        return []
    files = sorted(root.glob("*/chats/session-*.jsonl"), key=_mtime, reverse=True)
    found: dict[str, Conversation] = {}
    for path in files:
        if len(found) >= limit:
            break
        conversation = _read(path)
        if conversation is not None and conversation.id not in found:
            found[conversation.id] = conversation
    return list(found.values())


def chats_files(home: Path, session_id: str) -> list[Path]:
    """Every saved file of `session_id` under `<home>/.gemini/tmp/*/chats`."""
    short = session_id[:8]
    root = home / ".gemini" / "tmp"
    return [p for p in root.glob(f"*/chats/session-*-{short}.jsonl") if header_id(p) == session_id]


def latest_chats_file(home: Path, session_id: str) -> Path | None:
    """The file the session records into now (a loaded session can have older, renamed ones)."""
    return max(chats_files(home, session_id), key=_mtime, default=None)


def header_id(path: Path) -> str | None:
    """The session id in a recording's first line."""
    try:
        with path.open(encoding="utf-8", errors="replace") as handle:
            header = json.loads(handle.readline() or "null")
    except (OSError, ValueError):
        return None
    value = header.get("sessionId") if isinstance(header, dict) else None
    return value if isinstance(value, str) else None


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def _read(path: Path) -> Conversation | None:
    try:
        with path.open(encoding="utf-8", errors="replace") as handle:
            lines = [line for _, line in zip(range(_MAX_LINES_SCANNED), handle, strict=False)]
            more = handle.readline() != ""
    except OSError:
        return None
    header = json_record(lines[0]) if lines else None
    if header is None or not isinstance(header.get("sessionId"), str):
        return None
    last = header.get("lastUpdated") or header.get("startTime") or ""
    first_prompt = ""
    turns = False
    for line in lines[1:]:
        record = json_record(line)
        if record is None:
            continue
        patch = record.get("$set")
        if isinstance(patch, dict) and isinstance(patch.get("lastUpdated"), str):  # pyright: ignore[reportUnknownMemberType]
            last = patch["lastUpdated"]  # pyright: ignore[reportUnknownVariableType]
        if record.get("type") in ("user", "gemini"):
            turns = True
        if not first_prompt and record.get("type") == "user":
            first_prompt = _text(record.get("content"))
    if not turns and not more:
        return None  # a history-less recording (an unused warm session, a failed load): nobody's conversation
    if more:
        last = _last_update(path) or last
    project_root = path.parent.parent / ".project_root"
    try:
        cwd = project_root.read_text(encoding="utf-8").strip()
    except OSError:
        cwd = ""
    return Conversation(
        id=header["sessionId"],
        last_active=str(last),  # pyright: ignore[reportUnknownArgumentType]
        cwd=cwd,
        first_prompt=_shorten(first_prompt),
    )


def _last_update(path: Path) -> str | None:
    """The newest `$set.lastUpdated` in the file's tail (a long session's head is long out of date)."""
    try:
        with path.open("rb") as handle:
            size = handle.seek(0, 2)
            handle.seek(max(0, size - _TAIL_BYTES))
            tail = handle.read().decode("utf-8", errors="replace").splitlines()
    except OSError:
        return None
    for line in reversed(tail if size <= _TAIL_BYTES else tail[1:]):  # the first tail line may be cut
        record = json_record(line)
        patch = record.get("$set") if record is not None else None
        if isinstance(patch, dict) and isinstance(patch.get("lastUpdated"), str):  # pyright: ignore[reportUnknownMemberType]
            return str(patch["lastUpdated"])  # pyright: ignore[reportUnknownArgumentType]
    return None


def json_record(line: str) -> dict[str, Any] | None:
    """One recording line as an object; None for anything else (a cut line, a stray value)."""
    try:
        value = json.loads(line)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None  # pyright: ignore[reportUnknownVariableType]


def _text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts: list[str] = []
        for part in content:  # pyright: ignore[reportUnknownVariableType]
            text = part.get("text") if isinstance(part, dict) else None  # pyright: ignore[reportUnknownMemberType]
            # The CLI prepends a <session_context> part describing the workspace; it is not the user's prompt.
            if isinstance(text, str) and not text.lstrip().startswith("<session_context>"):
                parts.append(text)
        return " ".join(parts)
    return ""


def _shorten(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= FIRST_PROMPT_CHARS else flat[: FIRST_PROMPT_CHARS - 1] + "…"
