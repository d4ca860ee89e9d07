"""The disk side of setup: atomic writes that keep a file's mode and its links, backups, and the record of what
setup wrote, so that `--remove` can put each file back byte for byte.

A client's config is often a link into a dotfiles repository: a write replaces the link's target, never the link.
The backup sits beside that target (`<name>.gemini-relay-backup`, mode and times kept) and holds the file as it
was before setup first touched it. The record (`<state dir>/setup.json`, 0600) notes for each file whether it
existed, where its backup is, the digest of what setup last wrote, the folders and side files setup's writes
created, and each entry as written. A file that still has that digest at `--remove` is restored from the backup
(or deleted, with those folders and side files, when setup made it); one changed since is edited instead.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from gemini_relay.core.files import load_trusted_json, write_file

BACKUP_SUFFIX = ".gemini-relay-backup"
RECORD_NAME = "setup.json"
PRIVATE = 0o600


def real(path: Path) -> Path:
    """The file a possibly linked `path` names (itself when it is not a link)."""
    return Path(os.path.realpath(path))


def read_bytes(path: Path) -> bytes | None:
    try:
        return real(path).read_bytes()
    except FileNotFoundError:
        return None


def digest(data: bytes | None) -> str:
    return "" if data is None else hashlib.sha256(data).hexdigest()


def file_mode(path: Path) -> int | None:
    try:
        return real(path).stat().st_mode & 0o7777
    except FileNotFoundError:
        return None


def new_file_mode() -> int:
    """The mode a new file gets under this process's umask."""
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o666 & ~mask


def make_folders(folder: Path) -> list[str]:
    """Create `folder` and any missing parents; the ones created, outermost first."""
    missing: list[Path] = []
    probe = folder
    while not probe.exists():
        missing.append(probe)
        probe = probe.parent
    folder.mkdir(parents=True, exist_ok=True)
    return [str(p) for p in reversed(missing)]


def replace_file(path: Path, data: bytes, mode: int) -> None:
    """`data` at `path` (through a link at `path`), whole or not at all, with `mode`."""
    target = real(path)
    fd, scratch = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".gemini-relay")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fchmod(out.fileno(), mode)
            os.fsync(out.fileno())
        Path(scratch).replace(target)
    except BaseException:  # cleanup, re-raised: no scratch file is left beside the config
        Path(scratch).unlink(missing_ok=True)
        raise


def make_backup(path: Path) -> Path:
    """A copy of the file (mode and times kept) beside it; a backup already there under that name is kept too."""
    target = real(path)
    backup = target.with_name(target.name + BACKUP_SUFFIX)
    if backup.exists():
        backup = target.with_name(f"{target.name}{BACKUP_SUFFIX}-{time.strftime('%Y%m%d-%H%M%S')}")
    shutil.copy2(target, backup)
    return backup


@dataclass
class FileRecord:
    """What setup did to one file (see the module docstring)."""

    existed: bool
    backup: str = ""
    written: str = ""  # sha256 of the bytes setup last wrote
    restorable: bool = True  # False once someone else changed the file between two setup writes
    created_folders: list[str] = field(default_factory=list)
    side_files: list[str] = field(default_factory=list)
    entries: dict[str, dict[str, Any]] = field(default_factory=dict)  # name -> {"value": ..., "text": ...}

    @classmethod
    def load(cls, raw: object) -> FileRecord | None:
        if not isinstance(raw, dict):
            return None
        try:
            return cls(**raw)
        except TypeError:
            return None


class Records:
    """`<state dir>/setup.json`: one FileRecord per config file setup wrote, by absolute path."""

    def __init__(self, state_dir: Path) -> None:
        self.path = state_dir / RECORD_NAME
        raw = load_trusted_json(self.path, what="the setup record") or {}
        files = raw.get("files") if isinstance(raw.get("files"), dict) else {}
        loaded = {key: FileRecord.load(value) for key, value in (files or {}).items()}
        self.files: dict[str, FileRecord] = {key: rec for key, rec in loaded.items() if rec is not None}

    def get(self, path: Path) -> FileRecord | None:
        return self.files.get(str(path))

    def put(self, path: Path, record: FileRecord) -> None:
        self.files[str(path)] = record
        self.save()

    def drop(self, path: Path) -> None:
        self.files.pop(str(path), None)
        self.save()

    def save(self) -> None:
        if not self.files:
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()
            return
        body = {"version": 1, "files": {key: asdict(rec) for key, rec in self.files.items()}}
        write_file(self.path, (json.dumps(body, indent=2, ensure_ascii=False) + "\n").encode(), private=True)


def restore(path: Path, record: FileRecord, *, keep_file: bool = False) -> None:
    """Put the file back as it was before setup: its backup moved over it, or (setup made it) the file removed,
    then the side files and folders setup's writes created, when they are still there and empty. `keep_file`: a
    write that failed before changing the file drops only its backup, side files and folders."""
    if keep_file:
        if record.backup:
            Path(record.backup).unlink(missing_ok=True)
    elif record.existed:
        Path(record.backup).replace(real(path))
    else:
        path.unlink(missing_ok=True)
    for side in record.side_files:
        Path(side).unlink(missing_ok=True)
    for folder in reversed(record.created_folders):
        with contextlib.suppress(OSError):  # not empty: something else lives there now
            Path(folder).rmdir()
