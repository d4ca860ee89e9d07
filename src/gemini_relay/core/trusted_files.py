"""Files the relay writes and the state it reads back, without following a link someone else planted.

Every write goes to a fresh temporary file made with O_CREAT|O_EXCL|O_NOFOLLOW inside the opened destination folder
and is renamed over the final name, so a link at either name is replaced, never written through. A `jailed` write
also walks the folder from `/` one component at a time with O_NOFOLLOW (creating what is missing): the caller checked
that realpath against its root earlier, and a link swapped in since then is refused at write time instead of
followed. State read back (task and job records, the upload cache) counts only when this user owns the file and its
folder and nobody else may write them; anything else is ignored with a warning, and corrupt JSON reads as absent.

Light on purpose: the entry point imports this before the MCP SDK loads.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gemini_relay.log import logger

OTHERS_WRITE = 0o002  # records written under the user's umask (a umask of 002 makes them group-writable)
GROUP_OR_OTHERS_WRITE = 0o022  # files the relay creates 0600 itself
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_warned: set[tuple[str, str]] = set()


class LinkInPath(OSError):
    """A jailed destination passes through a symlink (or a non-folder) at write time: nothing was written."""


def write_file(
    path: Path,
    data: bytes,
    *,
    jailed: bool = False,
    private: bool = False,
    durable: bool = False,
    exclusive: bool = False,
) -> Path:
    """`data` at `path`, whole or not at all; returns `path`. Missing folders are made (0700 when `private`).

    `jailed`: `path.parent` is a realpath the caller checked against its root; no component of it may be a link now.
    `exclusive`: never replace what is at `path` (the finished temporary file is hard-linked in, which fails when the
    name is taken, so the file still appears whole or not at all).
    `private`: the file is 0600 (else the umask decides, as for any new file). `durable`: fsync'd, folder too.

    Raises:
        LinkInPath: a jailed folder passes through a link (or a file) at write time.
        FileExistsError: `exclusive`, and something is at `path` already (nothing was written).
        OSError: the folder or file cannot be written (full, read-only, too long a name).
    """
    folder = _open_jailed(path.parent, private) if jailed else _open_folder(path.parent, private)
    try:
        tmp = f".gemini-relay-{os.urandom(8).hex()}.tmp"  # short: any final name that fits NAME_MAX works
        fd = os.open(tmp, _NEW_FILE, 0o600 if private else 0o666, dir_fd=folder)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                if durable:
                    handle.flush()
                    os.fsync(handle.fileno())
            if exclusive:
                os.link(tmp, path.name, src_dir_fd=folder, dst_dir_fd=folder, follow_symlinks=False)
                _unlink_quietly(tmp, folder)
            else:
                os.replace(tmp, path.name, src_dir_fd=folder, dst_dir_fd=folder)
        except BaseException:  # cleanup, re-raised: no temporary file is left behind
            _unlink_quietly(tmp, folder)
            raise
        if durable:
            os.fsync(folder)
    finally:
        os.close(folder)
    return path


SELF_IGNORING = b"# gemini-relay's generated media: out of git status and reviews. Delete this file to track them.\n*\n"


def ignored_by_git(folder: Path) -> Path:
    """`folder` (a realpath inside the project the caller checked), made if missing, holding a `.gitignore` of `*`:
    git, and so gemini-assess and gemini-review, never count what is generated there. A `.gitignore` already there is
    the user's and stays."""
    marker = folder / ".gitignore"
    if not marker.exists():
        write_file(marker, SELF_IGNORING, jailed=True)
    return folder


def _open_folder(folder: Path, private: bool) -> int:
    folder.mkdir(parents=True, exist_ok=True, mode=0o700 if private else 0o777)
    return os.open(folder, _DIR_FLAGS)


def _open_jailed(folder: Path, private: bool) -> int:
    """The folder opened component by component from `/`, never through a link; what is missing is made."""
    absolute = folder.absolute()  # a realpath already: no ".." to fold
    fd = os.open("/", _DIR_FLAGS)
    try:
        for part in absolute.parts[1:]:
            try:
                child = os.open(part, _DIR_FLAGS | os.O_NOFOLLOW, dir_fd=fd)
            except FileNotFoundError:
                with contextlib.suppress(FileExistsError):  # made meanwhile: still opened without following
                    os.mkdir(part, 0o700 if private else 0o777, dir_fd=fd)
                child = os.open(part, _DIR_FLAGS | os.O_NOFOLLOW, dir_fd=fd)
            except OSError as exc:
                if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
                    raise
                moved = f"{absolute} is no longer the folder checked before the run ({part!r} is a link)"
                raise LinkInPath(exc.errno, moved, str(absolute)) from None
            os.close(fd)
            fd = child
    except BaseException:  # cleanup, re-raised: the descriptor is not leaked
        os.close(fd)
        raise
    return fd


def _unlink_quietly(name: str, folder: int) -> None:
    with contextlib.suppress(OSError):
        os.unlink(name, dir_fd=folder)


def read_trusted(path: Path, *, what: str, mask: int = GROUP_OR_OTHERS_WRITE, limit: int | None = None) -> bytes | None:
    """The file's bytes when it is a regular file this user owns, in a folder this user owns, neither writable by
    the `mask` bits; None when missing, or (warned once per file) when it is a link, someone else's or writable by
    others, or over `limit` bytes. `what` names the file in the warning."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)  # a FIFO must not block us
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            _warn(path, what, "it is a symlink")
        return None
    try:
        info = os.fstat(fd)
        problem = _untrusted(info, "it", mask, stat.S_ISREG) or _folder_problem(path.parent, mask)
        if problem is None and limit is not None and info.st_size > limit:
            problem = f"it is {info.st_size} bytes (more than {limit})"
        if problem is None:
            with open(fd, "rb", closefd=False) as handle:
                return handle.read()
    except OSError:
        return None
    finally:
        os.close(fd)
    _warn(path, what, problem)
    return None


def load_trusted_json(
    path: Path, *, what: str, mask: int = GROUP_OR_OTHERS_WRITE, limit: int | None = None
) -> dict[str, Any] | None:
    """`read_trusted`, parsed: a JSON object, or None for anything else (corrupt, too deeply nested, not an object),
    warned about once per file so a hostile or broken record is seen, never fatal."""
    raw = read_trusted(path, what=what, mask=mask, limit=limit)
    if raw is None:
        return None
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        _warn(path, what, "it is not valid JSON")
        return None
    if not isinstance(data, dict):
        _warn(path, what, "it is not a JSON object")
        return None
    return data  # pyright: ignore[reportUnknownVariableType]


def _folder_problem(folder: Path, mask: int) -> str | None:
    try:
        info = folder.stat()
    except FileNotFoundError:
        return "its folder is gone"
    return _untrusted(info, f"its folder {folder}", mask, stat.S_ISDIR)


def _untrusted(info: os.stat_result, subject: str, mask: int, kind: Callable[[int], bool]) -> str | None:
    if not kind(info.st_mode):
        return f"{subject} is not a regular {'file' if kind is stat.S_ISREG else 'folder'}"
    if info.st_uid != os.getuid():
        return f"{subject} belongs to uid {info.st_uid}, not this user ({os.getuid()})"
    if info.st_mode & mask:
        who = "others" if mask == OTHERS_WRITE else "the group or others"
        return f"{subject} is writable by {who} (mode {stat.S_IMODE(info.st_mode):o})"
    return None


def _warn(path: Path, what: str, problem: str) -> None:
    if (str(path), problem) in _warned:
        return
    _warned.add((str(path), problem))
    logger.warning("Ignoring %s %s: %s", what, path, problem)
