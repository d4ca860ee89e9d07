"""The project-root jail every file reference passes (`@` tokens, `files` entries, context packing, images):
lexical and resolved escapes, files opened without following a final link and judged on the descriptor itself (a
folder or file swapped for a link between the check and the open is caught), and bounded reads of what was opened."""

from __future__ import annotations

import fcntl
import os
import re
from collections.abc import Sequence
from pathlib import Path

O_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
_DRIVE = re.compile(r"^[A-Za-z]:[\\/]")
_MAX_TOKEN_SHOWN = 200


def lexical_escape(candidate: str) -> str | None:
    if "\0" in candidate:
        return "the path contains a NUL byte"
    if candidate.startswith("~"):
        return "home-directory paths are not allowed"
    if _DRIVE.match(candidate):
        return "drive-letter paths are not allowed"
    unified = candidate.replace("\\", "/")  # a backslash is a separator on Windows: judge it as one everywhere
    if unified.startswith("/"):
        return "absolute paths are not allowed"
    depth = 0
    for segment in unified.split("/"):
        if segment == "..":
            depth -= 1
            if depth < 0:
                return "the path leaves the project root"
        elif segment not in ("", "."):
            depth += 1
    return None


def resolved_escape(candidate: str, real_root: str) -> str | None:
    # realpath follows every symlink that exists, so a dangling or in-root link to outside is caught too.
    if inside(os.path.realpath(Path(real_root) / candidate), real_root):
        return None
    return "the path resolves outside the project root"


def inside(real: str, real_root: str) -> bool:
    return real == real_root or real.startswith(real_root.rstrip(os.sep) + os.sep)


def shown(token: str) -> str:
    safe = "".join(ch if ch.isprintable() else f"\\x{ord(ch):02x}" for ch in token)
    return safe if len(safe) <= _MAX_TOKEN_SHOWN else safe[:_MAX_TOKEN_SHOWN] + "…"


def read_prefix(fd: int, limit: int) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while size < limit:
        chunk = os.read(fd, limit - size)
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


class OutsideRoots(Exception):  # noqa: N818 - a reason, not a failure of the relay: callers name it per field
    """The file opened is not under any of the roots (the path was swapped for, or runs through, a link out)."""


def opened_path(fd: int) -> str | None:
    """Where an open descriptor's file really is (Linux /proc, macOS F_GETPATH); None when the platform cannot say."""
    try:
        return str(Path(f"/proc/self/fd/{fd}").readlink())
    except OSError:
        pass
    getpath = getattr(fcntl, "F_GETPATH", None)
    if getpath is None:
        return None
    try:
        raw = fcntl.fcntl(fd, getpath, bytes(4096))
    except OSError:
        return None
    return os.fsdecode(raw.split(b"\0", 1)[0])


def open_jailed(real: str, real_roots: Sequence[str]) -> int:
    """A read-only descriptor for `real` whose opened file is under one of `real_roots` (the caller fstats its kind).

    The last component is never followed (O_NOFOLLOW) and the jail is judged on the descriptor, so what is read
    from it is what was checked, whatever the path names a moment later.

    Raises:
        OSError: it cannot be opened (ELOOP: the last component is a link).
        OutsideRoots: the file opened is outside every root.
    """
    fd = os.open(real, O_FLAGS)
    try:
        where = opened_path(fd)
        if where is None:  # the platform cannot name it: the opened file must still be what the path resolves to
            resolved = os.path.realpath(real)
            info, now = os.fstat(fd), Path(resolved).stat()
            where = resolved if (info.st_dev, info.st_ino) == (now.st_dev, now.st_ino) else ""
        if not any(inside(where, root) for root in real_roots):
            raise OutsideRoots(where)
    except BaseException:  # cleanup, re-raised: a refused or failed check leaves no descriptor open
        os.close(fd)
        raise
    return fd
