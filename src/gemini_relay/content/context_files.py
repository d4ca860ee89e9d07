"""The files a `files` argument names, read whole for packing: matched with the `@` jail (inline.match_files),
binaries, non-UTF-8 and over-large files left out by name with their reason, nothing truncated.

Reads stay bounded: a file is read only when it could fit the budget at all (BYTES_PER_TOKEN_MAX bytes a token:
four characters of up to four UTF-8 bytes), and no more than MAX_READ_BYTES in all; what is not read is left out as
over the budget, by name.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from gemini_relay.content.inline import match_files
from gemini_relay.content.jail import OutsideRoots, open_jailed, read_prefix
from gemini_relay.content.packing import LeftOut, LeftOutReason, PackOrder, Piece, file_block

__all__ = ["BYTES_PER_TOKEN_MAX", "MAX_PACK_FILE_BYTES", "MAX_READ_BYTES", "Gathered", "gather"]

MAX_PACK_FILE_BYTES = 8 * 1024 * 1024  # one file over this is left out whole: no context window takes it
BYTES_PER_TOKEN_MAX = 16  # a generous bound: a file bigger than budget x this cannot fit
MAX_READ_BYTES = 64 * 1024 * 1024  # read in all per call, whatever the budget
_SNIFF_BYTES = 8 * 1024  # a NUL in the first 8 KB marks a binary (git's test, as in inline.py)


@dataclass(frozen=True)
class Gathered:
    pieces: tuple[Piece, ...]  # read whole, in matching order
    left_out: tuple[LeftOut, ...]  # excluded before packing, each with its reason
    unmatched: tuple[str, ...]  # entries that named nothing


def gather(refs: Sequence[str], root: Path, budget: int, order: PackOrder) -> Gathered:
    """Match `refs` under `root` and read what could fit `budget` tokens.

    Raises:
        InputError: an entry leaves the root (nothing is read).
    """
    matched = match_files(refs, root)
    sized: list[tuple[str, str, int]] = []
    left: list[LeftOut] = [LeftOut(label, LeftOutReason.SKIPPED) for label in matched.skipped]
    left += [LeftOut(label, LeftOutReason.UNREADABLE) for label, _ in matched.unreadable]
    for label, real in matched.files:
        try:
            size = os.stat(real).st_size  # noqa: PTH116 - a plain stat of a realpath the walk produced
        except OSError:
            left.append(LeftOut(label, LeftOutReason.UNREADABLE))
            continue
        sized.append((label, real, size))
    if order is PackOrder.SMALLEST_FIRST:
        sized.sort(key=lambda item: (item[2], item[0]))
    pieces: list[Piece] = []
    spent = 0
    for label, real, size in sized:
        if size > MAX_PACK_FILE_BYTES:
            left.append(LeftOut(label, LeftOutReason.TOO_LARGE))
            continue
        if size > budget * BYTES_PER_TOKEN_MAX or spent + size > MAX_READ_BYTES:
            left.append(LeftOut(label, LeftOutReason.OVER_BUDGET))
            continue
        spent += size
        piece_or_reason = _read(label, real, size, matched.root)
        if isinstance(piece_or_reason, LeftOutReason):
            left.append(LeftOut(label, piece_or_reason))
            continue
        pieces.append(piece_or_reason)
    return Gathered(tuple(pieces), tuple(left), matched.unmatched)


def _read(label: str, real: str, size: int, root: str) -> Piece | LeftOutReason:
    try:
        fd = open_jailed(real, [root])  # judged on the file as opened: a link swapped in since the match is not read
    except OutsideRoots:
        return LeftOutReason.SKIPPED
    except OSError:
        return LeftOutReason.UNREADABLE
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return LeftOutReason.SKIPPED
        data = read_prefix(fd, MAX_PACK_FILE_BYTES + 1)
    except OSError:
        return LeftOutReason.UNREADABLE
    finally:
        os.close(fd)
    if len(data) > MAX_PACK_FILE_BYTES:
        return LeftOutReason.TOO_LARGE  # grew since the stat
    if b"\0" in data[:_SNIFF_BYTES]:
        return LeftOutReason.BINARY
    try:
        content = data.decode("utf-8")
    except UnicodeDecodeError:
        return LeftOutReason.NOT_UTF8
    return Piece(label, file_block(label, content), size)
