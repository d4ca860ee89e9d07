"""The project-root jail every file reference passes (`@` tokens, `files` entries, context packing): lexical and
resolved escapes, and bounded reads of a file already opened without following links."""

from __future__ import annotations

import os
import re
from pathlib import Path

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
