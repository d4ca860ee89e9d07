"""The relay's own conversation store for the stateless API: one JSON file per conversation.

`<state_dir>/api-conversations/<id>.json` holds every completed turn (prompt and answer). A turn is appended only
when its run succeeded; the append re-reads the file under an exclusive lock, so two runs continuing the same
conversation (in two supervisor processes) both land. Writes go to a temp file then `os.replace`: a reader sees the
old file or the new one, never half of one.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from gemini_relay.backends.capabilities import Conversation
from gemini_relay.core.trusted_files import load_trusted_json, write_file
from gemini_relay.errors import InputError

FORMAT_VERSION = 1
FIRST_PROMPT_CHARS = 80
# A canonical UUID, the only shape this store mints: nothing else can name a file under the store.
CONVERSATION_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_MAX_LISTED_FILES = 1000  # gemini-conversations reads at most this many files, newest first


def validate_conversation_id(raw: str) -> str:
    """The id when it has the store's shape, else InputError. Safe to call in the server, before a job exists."""
    if not CONVERSATION_ID.fullmatch(raw):
        shown = raw if len(raw) <= 60 else raw[:59] + "…"
        raise InputError(
            f"conversationId {shown!r} is not an api-backend conversation id: expected a lowercase UUID such as "
            "0f8fad5b-d9cb-469f-a165-70867728950e (as printed after 🧵 conversationId)"
        )
    return raw


def new_conversation_id() -> str:
    return str(uuid.uuid4())


@dataclass(frozen=True)
class Turn:
    prompt: str
    answer: str
    model: str
    at: str

    def as_json(self) -> dict[str, str]:
        return {"prompt": self.prompt, "answer": self.answer, "model": self.model, "at": self.at}


class ConversationStore:
    def __init__(self, state_dir: Path) -> None:
        self.root = state_dir / "api-conversations"

    def path(self, conversation_id: str) -> Path:
        return self.root / f"{validate_conversation_id(conversation_id)}.json"

    def exists(self, conversation_id: str) -> bool:
        return self.path(conversation_id).is_file()

    def turns(self, conversation_id: str) -> list[Turn]:
        """The stored turns; InputError naming the id when it is unknown or its file is unreadable."""
        data = self._read(self.path(conversation_id))
        if data is None:
            raise InputError(
                f"Unknown conversationId {conversation_id}: the api backend has no stored conversation with that id "
                f"(in {self.root}). Start without conversationId, or pick an id from gemini-conversations."
            )
        return [_turn(t) for t in data.get("turns", []) if isinstance(t, dict)]

    def append(self, conversation_id: str, turn: Turn, *, cwd: Path) -> int:
        """Add one completed turn (creating the conversation); returns the conversation's turn count."""
        path = self.path(conversation_id)
        self._ensure_root()
        with self._locked(conversation_id):
            data = self._read(path) or {
                "version": FORMAT_VERSION,
                "id": conversation_id,
                "created_at": turn.at,
                "cwd": str(cwd),
                "turns": [],
            }
            turns: list[Any] = data.setdefault("turns", [])
            turns.append(turn.as_json())
            data["updated_at"] = turn.at
            data["model"] = turn.model
            _write_atomic(path, data)
            return len(turns)

    def recent(self, limit: int) -> list[Conversation]:
        """Newest first; unreadable files are skipped, never fatal."""
        if not self.root.is_dir():
            return []
        files = [p for p in self.root.glob("*.json") if CONVERSATION_ID.fullmatch(p.stem)]
        files.sort(key=_mtime, reverse=True)
        found: list[Conversation] = []
        for path in files[:_MAX_LISTED_FILES]:
            if len(found) >= limit:
                break
            data = self._read(path)
            if data is None:
                continue
            turns = [t for t in data.get("turns", []) if isinstance(t, dict)]
            first = str(turns[0].get("prompt", "")) if turns else ""
            found.append(
                Conversation(
                    id=path.stem,
                    last_active=str(data.get("updated_at") or data.get("created_at") or ""),
                    cwd=str(data.get("cwd") or ""),
                    first_prompt=_shorten(first),
                )
            )
        return found

    def _ensure_root(self) -> None:
        self.root.mkdir(mode=0o700, parents=True, exist_ok=True)
        with contextlib.suppress(OSError):
            self.root.chmod(0o700)

    @contextlib.contextmanager
    def _locked(self, conversation_id: str) -> Iterator[None]:
        fd = os.open(self.root / f".{conversation_id}.lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing releases the lock

    @staticmethod
    def _read(path: Path) -> dict[str, Any] | None:
        return load_trusted_json(path, what="the conversation record")  # someone else's would feed the prompt


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def _turn(raw: dict[str, Any]) -> Turn:
    fields = (str(raw.get(key, "")) for key in ("prompt", "answer", "model", "at"))
    return Turn(*fields)


def _write_atomic(path: Path, data: dict[str, Any]) -> None:
    write_file(path, json.dumps(data, ensure_ascii=False, indent=1).encode("utf-8"), private=True, durable=True)


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def _shorten(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= FIRST_PROMPT_CHARS else flat[: FIRST_PROMPT_CHARS - 1] + "…"
