"""Keep the Gemini CLI 0.61.0's own file handling from losing warm sessions' recordings.

A spare's recording survives a cold CLI's start: that start deletes every recording without a prompt in its
project (its session cleanup, on by default), and the warm CLI, which only ever appends, would then record the
spare's first turn into a file without the header that names the session, which neither `--resume` nor
`session/load` finds. The recording as it was when the spare was made is put back before the spare is used.

`session/load` is kept from wiping a saved conversation:

Loading first starts a fresh recording named `session-<now, to the minute>-<first 8 of id>.jsonl`, and only then
reads the saved history. When the saved file has that very name (it was written in the same minute) the fresh
header and an empty history are appended to it, the history is lost and the load fails with "No previous sessions
found". A saved file renamed to a name the CLI never generates (seconds added) cannot collide; the CLI finds
sessions by the id inside the file, not by its name. The empty recording the load leaves behind is removed.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

from gemini_relay.backends.gemini_cli.sessions import chats_files, header_id, latest_chats_file
from gemini_relay.log import logger

_CLI_NAME = re.compile(r"^session-(\d{4}-\d{2}-\d{2}T\d{2}-\d{2})-([A-Za-z0-9_-]{1,8})\.jsonl$")
_HEAD_BYTES = 64 * 1024


@dataclass(frozen=True)
class Recording:
    """A prompt-less session's recording as the CLI wrote it: where, and every byte of it (a header line)."""

    path: Path
    content: bytes


def snapshot(home: Path, session_id: str) -> Recording | None:
    """The session's recording now, or None when it has none or it is past a prompt-less size."""
    path = latest_chats_file(home, session_id)
    if path is None:
        return None
    try:
        content = path.read_bytes()[: _HEAD_BYTES + 1]
    except OSError:
        return None
    return Recording(path, content) if len(content) <= _HEAD_BYTES else None


def ensure_recorded(home: Path, session_id: str, kept: Recording | None) -> bool:
    """True when the session has its recording, putting `kept` back where a cleanup deleted it. The file is created
    exclusively: a recording that reappeared meanwhile is never overwritten."""
    if latest_chats_file(home, session_id) is not None:
        return True
    if kept is None:
        return False
    # Not put back: it reappeared meanwhile (ours only if it names the session), or cannot be written.
    return put_back(kept) or header_id(kept.path) == session_id


def put_back(kept: Recording) -> bool:
    """The recording written again where the CLI records the session, created exclusively (a file there is never
    overwritten). A few KB: cheaper to write in the caller's event loop than to hand to a worker thread."""
    try:
        fd = os.open(kept.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return False
    except OSError as exc:
        logger.info("Could not restore a spare warm session's recording: %s", exc.strerror)
        return False
    with os.fdopen(fd, "wb") as handle:
        handle.write(kept.content)
    logger.info("Restored a spare warm session's recording that a cold Gemini CLI's session cleanup deleted")
    return True


def protect_for_load(home: Path, session_id: str) -> list[Path]:
    """Rename every CLI-named file of the session to a collision-free name; returns the files as they are now."""
    kept: list[Path] = []
    for path in chats_files(home, session_id):
        found = _CLI_NAME.match(path.name)
        if found is None:
            kept.append(path)
            continue
        seconds = _start_seconds(path)
        target = path.with_name(f"session-{found.group(1)}-{seconds}-{found.group(2)}.jsonl")
        try:
            path.rename(target)
        except OSError as exc:
            logger.info("Could not rename a Gemini CLI session file before loading it: %s", exc.strerror)
            kept.append(path)
            continue
        kept.append(target)
    return kept


def remove_load_leftovers(home: Path, session_id: str, keep: list[Path]) -> None:
    """Delete the history-less recordings a load created beside the real file."""
    for path in chats_files(home, session_id):
        if path not in keep and not _has_turns(path):
            with contextlib.suppress(OSError):
                path.unlink()


def remove_history_less(home: Path, session_ids: set[str], start_cwd: Path, since: float) -> None:
    """Delete the recordings without a user turn that a finished warm process left: those of `session_ids`, and
    those started after `since` (epoch seconds) in the project of `start_cwd`, the process's own directory (each
    ACP start opens a session there). Files with turns are conversations and are always kept."""
    for session_id in session_ids:
        remove_load_leftovers(home, session_id, [])
    root = home / ".gemini" / "tmp"
    for marker in root.glob("*/.project_root"):
        try:
            if Path(marker.read_text(encoding="utf-8").strip()) != start_cwd:
                continue
        except OSError:
            continue
        for path in marker.parent.glob("chats/session-*.jsonl"):
            if _started_after(path, since) and not _has_turns(path):
                with contextlib.suppress(OSError):
                    path.unlink()


def _started_after(path: Path, since: float) -> bool:
    try:
        return path.stat().st_mtime >= since
    except OSError:
        return False


def _start_seconds(path: Path) -> str:
    try:
        with path.open(encoding="utf-8", errors="replace") as handle:
            header = json.loads(handle.readline() or "null")
    except (OSError, ValueError):
        return "00"
    start = header.get("startTime") if isinstance(header, dict) else None
    # `2026-12-01T09:05:43.223Z` -> `43`; the name only has to differ from the CLI's pattern.
    return start[17:19] if isinstance(start, str) and len(start) >= 19 and start[17:19].isdigit() else "00"


def _has_turns(path: Path) -> bool:
    """True when the file records a real user turn (not only the `<session_context>` preamble)."""
    try:
        with path.open("rb") as handle:
            head = handle.read(_HEAD_BYTES)
    except OSError:
        return True
    for raw in head.splitlines():
        try:
            record = json.loads(raw)
        except ValueError:
            continue
        if isinstance(record, dict) and record.get("type") in ("user", "gemini"):
            return True
    return False
