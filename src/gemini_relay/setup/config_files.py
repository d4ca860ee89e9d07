"""The disk side of setup: atomic writes that keep a file's mode, owner and links, backups, and the record of what
setup wrote, so that `--remove` can put each file back byte for byte.

A client's config is often a link into a dotfiles repository: a write replaces the link's target, never the link
(and a link whose target does not exist yet gets that target, the link kept). The backup sits beside that target
(`<name>.gemini-relay-backup`, mode and times kept) and holds the file as it was before setup first touched it. The
record (`<state dir>/setup.json`, 0600) notes for each file whether it existed, where its backup is, the digest of
what setup last wrote, the folders and side files (with their digests) setup's writes created, and each entry as
written. A file that still has that digest at `--remove` is restored from the backup (or deleted, with those folders
and the side files still as they were made, when setup made it); one changed since is edited instead. Nothing is
deleted whose bytes are not exactly what setup (or the CLI it ran) wrote.

A config is read only when it opens as a regular file (a folder or a FIFO is refused, never waited on), and written
only when its owner could write it: setup runs as root in containers and CI, where a 0444 file would otherwise be
replaced silently.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import stat
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from gemini_relay.core.trusted_files import load_trusted_json, write_file

BACKUP_SUFFIX = ".gemini-relay-backup"
RECORD_NAME = "setup.json"
PRIVATE = 0o600
_KINDS = {stat.S_IFDIR: "a folder", stat.S_IFIFO: "a FIFO", stat.S_IFSOCK: "a socket", stat.S_IFCHR: "a device"}


class NotAFile(OSError):
    """A config that cannot be read or written as a regular file by this user: the message says why."""


def real(path: Path) -> Path:
    """The file a possibly linked `path` names (itself when it is not a link; the missing target of a dangling one)."""
    return Path(os.path.realpath(path))


def read_bytes(path: Path) -> bytes | None:
    """The file's bytes, None when there is none. Opened non-blocking and checked on the opened descriptor, so a
    FIFO at the path is refused rather than waited on, and a folder rather than read.

    Raises:
        NotAFile: it is not a regular file, or it cannot be opened (no permission, a link loop).
    """
    try:
        fd = os.open(real(path), os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise NotAFile(f"it cannot be opened ({exc.strerror})") from None
    kind = stat.S_IFMT(os.fstat(fd).st_mode)
    if kind != stat.S_IFREG:
        os.close(fd)
        raise NotAFile(f"it is {_KINDS.get(kind, 'not a regular file')}, not a file")
    with os.fdopen(fd, "rb") as opened:
        return opened.read()


def digest(data: bytes | None) -> str:
    return "" if data is None else hashlib.sha256(data).hexdigest()


def file_digest(path: Path) -> str:
    """The digest of what is at `path` now ("" when nothing, or not a file)."""
    try:
        return digest(read_bytes(path))
    except NotAFile:
        return ""


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


def may_write(info: os.stat_result) -> bool:
    """Whether this user could write a file with `info` by its permission bits; root is judged as the file's owner
    (root may write anything, but setup writes only what the file's owner could)."""
    uid = os.geteuid()
    if uid == 0 or info.st_uid == uid:
        return bool(info.st_mode & stat.S_IWUSR)
    if info.st_gid in {os.getegid(), *os.getgroups()}:
        return bool(info.st_mode & stat.S_IWGRP)
    return bool(info.st_mode & stat.S_IWOTH)


def writable(path: Path) -> os.stat_result | None:
    """The stat of the file at `path` (through a link) when this user may replace it; None when there is none.

    Raises:
        NotAFile: it is read-only for its owner (or for this user): setup does not replace it.
    """
    try:
        info = real(path).stat()
    except FileNotFoundError:
        return None
    if not may_write(info):
        who = "its owner" if os.geteuid() == 0 else "you"
        raise NotAFile(f"it is read-only for {who} (mode {stat.S_IMODE(info.st_mode):04o}); left as it is")
    return info


def make_folders(folder: Path) -> list[str]:
    """Create `folder` and any missing parents; the ones created, outermost first."""
    missing: list[Path] = []
    probe = folder
    while not probe.exists():
        missing.append(probe)
        probe = probe.parent
    folder.mkdir(parents=True, exist_ok=True)
    return [str(p) for p in reversed(missing)]


def replace_file(path: Path, data: bytes, mode: int, like: os.stat_result | None = None) -> None:
    """`data` at `path` (at its target when `path` is a link), whole or not at all, with `mode` and, when `like` is
    the stat of the file it replaces, that file's owner and group: a temporary file beside it, fsync'd, renamed
    over it, and the folder fsync'd.

    Raises:
        NotAFile: the file's owner cannot be kept (it belongs to another user).
        OSError: the folder cannot be written.
    """
    target = real(path)
    fd, scratch = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".gemini-relay")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fchmod(out.fileno(), mode)
            if like is not None:
                _keep_owner(out.fileno(), like)
            os.fsync(out.fileno())
        Path(scratch).replace(target)
    except BaseException:  # cleanup, re-raised: no scratch file is left beside the config
        Path(scratch).unlink(missing_ok=True)
        raise
    _sync_folder(target.parent)


def _keep_owner(fd: int, like: os.stat_result) -> None:
    now = os.fstat(fd)
    if (now.st_uid, now.st_gid) == (like.st_uid, like.st_gid):
        return
    try:
        os.fchown(fd, like.st_uid, like.st_gid)
    except PermissionError:
        raise NotAFile(f"it belongs to uid {like.st_uid} gid {like.st_gid}, which setup cannot keep") from None


def _sync_folder(folder: Path) -> None:
    with contextlib.suppress(OSError):  # some file systems refuse fsync on a folder: the rename stands anyway
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def make_backup(path: Path) -> Path:
    """A copy of the file (mode, times and owner kept) beside it; a backup already there under that name is kept."""
    target = real(path)
    backup = target.with_name(target.name + BACKUP_SUFFIX)
    if backup.exists():
        backup = target.with_name(f"{target.name}{BACKUP_SUFFIX}-{time.strftime('%Y%m%d-%H%M%S')}")
    shutil.copy2(target, backup)
    info = target.stat()
    with contextlib.suppress(PermissionError):
        os.chown(backup, info.st_uid, info.st_gid)
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
    side_digests: dict[str, str] = field(default_factory=dict)  # side file -> sha256 as the CLI made it
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
    """`<state dir>/setup.json`: one FileRecord per config file setup wrote, by absolute path. Read and written
    under the setup lock (lock.py), so two runs never save over each other's records."""

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
    """Put the file back as it was before setup: its backup moved over it, or (setup made it) the file removed when
    it still holds exactly what setup wrote (a link at `path` stays: it is the user's), then the side files still as
    the CLI made them and the folders setup's writes created, when empty. `keep_file`: a write that failed before
    changing the file drops only its backup, side files and folders."""
    if keep_file:
        if record.backup:
            Path(record.backup).unlink(missing_ok=True)
    elif record.existed:
        Path(record.backup).replace(real(path))
    elif record.written and file_digest(path) == record.written:
        real(path).unlink(missing_ok=True)
    for side in record.side_files:
        made = record.side_digests.get(side)
        if made and file_digest(Path(side)) == made:  # changed since (or made before digests were kept): kept
            Path(side).unlink(missing_ok=True)
    for folder in reversed(record.created_folders):
        with contextlib.suppress(OSError):  # not empty: something else lives there now
            Path(folder).rmdir()
