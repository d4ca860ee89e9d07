"""agy's conversation store (agy.md §6) as conversation summaries for gemini-conversations.

`cache/last_conversations.json` maps each workspace (agy's physical cwd) to its latest conversation; transcripts under
`brain/<id>/.system_generated/logs/transcript.jsonl` give the first prompt and the last activity. agy rewrites the
cache in place without a lock, so a read can be torn: it is retried. Blocking file I/O: call it off the event loop.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path, PurePath
from typing import Any

from gemini_relay.backends.capabilities import Conversation

FIRST_PROMPT_CHARS = 80
TORN_READ_ATTEMPTS = 3
TORN_READ_PAUSE = 0.05  # agy truncates then writes a few hundred bytes; a short pause lets that finish
_MAX_LINES_SCANNED = 200  # the first user input is near the top; never read a whole long transcript
_SHIM_PARENT = "agy-openai-shim"  # agy-openai-shim makes one workspace per call (#167: 33,477 of 33,698 entries)
_SHIM_LEAF = "agy-call-"
_TRANSCRIPT = Path(".system_generated") / "logs" / "transcript.jsonl"


def agy_state_dir(env: Mapping[str, str]) -> Path:
    """`~/.gemini/antigravity-cli`, from the HOME agy runs with."""
    return Path(env.get("HOME") or Path.home()).expanduser() / ".gemini" / "antigravity-cli"


class StoreUnreadable(ValueError):
    """last_conversations.json stayed unparseable across retries."""


@dataclass
class ConversationListing:
    conversations: list[Conversation]
    notices: list[str] = field(default_factory=list[str])


def is_shim_workspace(path: str) -> bool:
    """Both an `agy-openai-shim` parent segment and an `agy-call-<n>` leaf are required (#168)."""
    parts = PurePath(path).parts
    return len(parts) >= 2 and parts[-1].startswith(_SHIM_LEAF) and _SHIM_PARENT in parts[:-1]


def read_last_conversations(
    state_dir: Path,
    *,
    attempts: int = TORN_READ_ATTEMPTS,
    pause: float = TORN_READ_PAUSE,
    sleep: Callable[[float], None] = time.sleep,
) -> dict[str, str]:
    """Workspace path -> latest conversation id. A missing file is an empty store.

    Raises:
        StoreUnreadable: the file stayed unparseable (or not a JSON object) on every attempt.
    """
    path = state_dir / "cache" / "last_conversations.json"
    problem = ""
    for attempt in range(max(1, attempts)):
        if attempt:
            sleep(pause)
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return {}
        except OSError as exc:
            problem = str(exc)
            continue
        try:
            value = json.loads(text)
        except ValueError as exc:
            problem = f"not valid JSON ({exc})"
            continue
        if isinstance(value, dict):
            return {k: v for k, v in value.items() if isinstance(k, str) and isinstance(v, str) and v}  # pyright: ignore[reportUnknownVariableType]
        problem = "not a JSON object"
    raise StoreUnreadable(f"{path} is unreadable: {problem}")


def latest_for_cwd(state_dir: Path, cwd: Path) -> str | None:
    """The conversation agy last ran in `cwd` (keyed by its physical path), or None (then start fresh)."""
    try:
        store = read_last_conversations(state_dir)
    except StoreUnreadable:
        return None
    return store.get(_canonical(cwd))


def _canonical(path: Path) -> str:
    try:
        return str(path.resolve(strict=True))
    except OSError:
        return str(path.absolute())


def list_conversations(state_dir: Path, limit: int, *, cwd: Path | None = None) -> ConversationListing:
    """Newest first. With `cwd` (canonicalised), only that workspace, unfiltered: the caller asked for it by name."""
    listing = ConversationListing([])
    try:
        store = read_last_conversations(state_dir)
    except StoreUnreadable as exc:
        store = {}
        listing.notices.append(f"agy's conversation index could not be read ({exc}); workspaces are not shown.")
    shim_ids = {cid for path, cid in store.items() if is_shim_workspace(path)}
    workspace_of = {cid: path for path, cid in store.items() if not is_shim_workspace(path)}
    candidates: dict[str, str] = {}
    if cwd is not None:
        key = _canonical(cwd)
        candidates = {cid: path for path, cid in store.items() if path == key}
    else:
        candidates = dict(workspace_of)
        brain = state_dir / "brain"
        if brain.is_dir():
            for entry in brain.iterdir():
                if entry.is_dir() and entry.name not in shim_ids:
                    candidates.setdefault(entry.name, workspace_of.get(entry.name, ""))
    summaries = [_summary(state_dir, cid, path) for cid, path in candidates.items()]
    summaries.sort(key=lambda pair: pair[0], reverse=True)
    listing.conversations = [conversation for _, conversation in summaries[: max(0, limit)]]
    return listing


def transcript_path(state_dir: Path, conversation_id: str) -> Path:
    return state_dir / "brain" / conversation_id / _TRANSCRIPT


def _summary(state_dir: Path, conversation_id: str, cwd: str) -> tuple[float, Conversation]:
    path = transcript_path(state_dir, conversation_id)
    try:
        mtime = path.stat().st_mtime
    except OSError:
        try:
            mtime = path.parents[2].stat().st_mtime  # brain/<id>/ itself
        except OSError:
            mtime = 0.0
    last_active = datetime.fromtimestamp(mtime, UTC).strftime("%Y-%m-%dT%H:%M:%SZ") if mtime else ""
    return mtime, Conversation(
        id=conversation_id, last_active=last_active, cwd=cwd, first_prompt=_shorten(_first_prompt(path))
    )


def _first_prompt(path: Path) -> str:
    try:
        with path.open(encoding="utf-8", errors="replace") as handle:
            for _, line in zip(range(_MAX_LINES_SCANNED), handle, strict=False):
                entry = _json(line)
                if entry is not None and entry.get("type") == "USER_INPUT":
                    return _text(entry.get("content"))
    except OSError:
        return ""
    return ""


def _json(line: str) -> dict[str, Any] | None:
    try:
        value = json.loads(line)
    except ValueError:
        return None  # the last line can be half-written while agy appends
    return value if isinstance(value, dict) else None  # pyright: ignore[reportUnknownVariableType]


def _text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        return _text(content.get("text") or content.get("content"))  # pyright: ignore[reportUnknownMemberType]
    if isinstance(content, list):
        return " ".join(_text(part) for part in content)  # pyright: ignore[reportUnknownVariableType]
    return ""


def _shorten(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= FIRST_PROMPT_CHARS else flat[: FIRST_PROMPT_CHARS - 1] + "…"
