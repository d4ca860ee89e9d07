"""`@` reference inlining: files, directories and globs under the project root are appended to the prompt as
delimited blocks within per-file and per-prompt byte budgets; a reference that leaves the root refuses the call."""

from __future__ import annotations

import fnmatch
import os
import posixpath
import re
import stat
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from gemini_relay.content._errors import PathEscapeError
from gemini_relay.content.jail import (
    OutsideRoots,
    inside,
    lexical_escape,
    open_jailed,
    read_prefix,
    resolved_escape,
    shown,
)
from gemini_relay.errors import InputError

__all__ = [
    "MAX_FILE_BYTES",
    "MAX_PROMPT_BYTES",
    "SKIP_DIRS",
    "InlineResult",
    "Matched",
    "inline_references",
    "match_files",
]

MAX_FILE_BYTES = 256 * 1024  # per file: keeps one huge file from crowding out the rest
MAX_PROMPT_BYTES = 2 * 1024 * 1024  # per prompt (~500K tokens of text): about model context and cost
SKIP_DIRS = frozenset(
    {"node_modules", ".git", "dist", "__pycache__", ".venv", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".hg"}
)
_SNIFF_BYTES = 8 * 1024  # a NUL in the first 8 KB marks a binary (git's test)
_UTF8_MAX_BACKOFF = 3  # a truncation point moves back at most 3 bytes to a character boundary
_MAX_LISTED = 50  # names printed per footer, so `@.` on a huge tree cannot flood the prompt

# `@` only at the start or after whitespace/opening punctuation, so `a@b.com` and `user@host` are prose.
_TOKEN = re.compile(r"(?<![^\s(\[\"'`])@(?P<ref>\S+)")
_TRAILING = ".,;:!?)]'\"`"
_GLOB_META = re.compile(r"[*?\[]")
# Expansion never sweeps up credentials the user did not name (a file named directly is their own choice).
_SECRET = re.compile(
    r"^(?:\.env.*|\.npmrc|\.netrc|\.git-credentials|id_(?:rsa|dsa|ecdsa|ed25519).*|.+\.(?:pem|key|pfx|p12))$",
    re.IGNORECASE | re.DOTALL,
)


@dataclass(frozen=True)
class InlineResult:
    """The rewritten prompt plus what happened to each referenced file (all paths relative to the root)."""

    text: str
    files: tuple[str, ...]  # inlined, in order of first reference
    truncated: tuple[str, ...]  # inlined, but only the first MAX_FILE_BYTES
    omitted: tuple[str, ...]  # left out: over the per-prompt budget
    unreadable: tuple[str, ...]  # exist but could not be read
    skipped: tuple[str, ...]  # deliberately not inlined: binary, special, secret or escaping entries


@dataclass(frozen=True)
class _Found:
    label: str  # logical path relative to the root, `/`-separated
    real: str | None  # realpath for a readable candidate, None for a skipped entry


def inline_references(prompt: str, root: Path) -> InlineResult:
    """Inline every `@` reference in `prompt` that names a file, directory or glob under `root`.

    Matched tokens lose their `@` (the prose still reads) and their files are appended as BEGIN/END blocks;
    unmatched tokens (`@param`, `@types/node`) stay verbatim.

    Raises:
        PathEscapeError: a token is absolute, starts with `~`, climbs out with `..`, uses a drive or backslash
            escape, contains NUL, or resolves (through symlinks) outside the root — even when nothing exists there.
    """
    real_root = os.path.realpath(root)
    tokens = [(match.start(), _candidates(match["ref"])) for match in _TOKEN.finditer(prompt)]
    # Refuse before reading anything: one escaping token rejects the whole call.
    for _, candidates in tokens:
        for candidate in candidates:
            reason = lexical_escape(candidate) or resolved_escape(candidate, real_root)
            if reason is not None:
                raise PathEscapeError(shown(candidates[0]), reason)
    inliner = _Inliner(real_root)
    pieces: list[str] = []
    last = 0
    for at, candidates in tokens:
        for candidate in candidates:
            found = inliner.resolve(candidate)
            if found is not None:
                pieces.append(prompt[last:at])
                last = at + 1  # drop only the `@`; any stripped punctuation stays in the prose
                inliner.include(found)
                break
    pieces.append(prompt[last:])
    return inliner.result("".join(pieces))


@dataclass(frozen=True)
class Matched:
    """What `files` entries name: the files (label, realpath) in order of first match, and what was not taken."""

    files: tuple[tuple[str, str], ...]
    skipped: tuple[str, ...]  # binary-by-kind, special, secret or escaping entries a directory or glob swept up
    unreadable: tuple[tuple[str, str], ...]  # (label, reason): folders that could not be listed
    unmatched: tuple[str, ...]  # entries that named nothing
    root: str = ""  # the realpath of the root they were matched under: a reader jails each open on it


def match_files(refs: Sequence[str], root: Path) -> Matched:
    """The files that `refs` (paths, directories and globs relative to `root`, as `@` takes them) name, with the
    same jail and walk: SKIP_DIRS are not entered, secrets are not swept up, links out of the root are not followed.

    Raises:
        InputError: (field `files`) an entry is absolute, climbs out, or resolves outside the root, before anything
            is read.
    """
    real_root = os.path.realpath(root)
    for ref in refs:
        if not ref.strip():
            raise InputError(
                "an entry is empty; name a file, a directory ('.' for the project) or a glob", field="files"
            )
        reason = lexical_escape(ref) or resolved_escape(ref, real_root)
        if reason is not None:
            raise InputError(f"refusing {shown(ref)!r}: {reason}", field="files")
    inliner = _Inliner(real_root)
    files: dict[str, str] = {}  # realpath -> label, first match wins
    unmatched: list[str] = []
    for ref in refs:
        found = inliner.resolve(ref)
        if found is None:
            unmatched.append(ref)
            continue
        for item in found:
            if item.real is None:
                inliner.skipped.setdefault(item.label)
            else:
                files.setdefault(item.real, item.label)
    return Matched(
        files=tuple((label, real) for real, label in files.items()),
        skipped=tuple(inliner.skipped),
        unreadable=tuple(inliner.unreadable.items()),
        unmatched=tuple(unmatched),
        root=real_root,
    )


def _candidates(ref: str) -> list[str]:
    """The raw token, then forms with trailing sentence punctuation stripped one character at a time."""
    forms = [ref]
    while ref and ref[-1] in _TRAILING:
        ref = ref[:-1]
        if ref:
            forms.append(ref)
    return forms


def _is_secret(name: str) -> bool:
    return _SECRET.match(name) is not None


def _parts(label: str) -> list[str]:
    return [part for part in label.split("/") if part]


def _segments_match(pattern: list[str], parts: list[str]) -> bool:
    """Glob match over path segments; `**` spans any number of segments (DP, so no backtracking blow-up)."""
    reach = [True] + [False] * len(parts)
    for segment in pattern:
        if segment == "**":
            seen = False
            for j, ok in enumerate(reach):
                seen = seen or ok
                reach[j] = seen
        else:
            reach = [False] + [reach[j] and fnmatch.fnmatchcase(part, segment) for j, part in enumerate(parts)]
    return reach[-1]


def _size_label(size: int) -> str:
    for unit, scale in (("MB", 1024 * 1024), ("KB", 1024)):
        if size % scale == 0:
            return f"{size // scale} {unit}"
    return f"{size} bytes"


class _Inliner:
    """Per-call state: budget, dedup, walk cache and the lists that end up in the result."""

    def __init__(self, real_root: str) -> None:
        self.root = real_root
        self.spent = 0
        self.seen: set[str] = set()
        self.blocks: list[str] = []
        self.files: list[str] = []
        self.truncated: list[str] = []
        self.omitted: list[str] = []
        self.unreadable: dict[str, str] = {}
        self.skipped: dict[str, None] = {}  # ordered set
        self.walks: dict[tuple[str, str, int | None], list[_Found]] = {}

    def resolve(self, candidate: str) -> list[_Found] | None:
        """What a token names, or None when it names nothing (so it stays verbatim)."""
        logical = posixpath.normpath(candidate.replace("\\", "/"))
        logical = "" if logical == "." else logical
        real = os.path.realpath(Path(self.root) / candidate)
        try:
            mode = Path(real).stat().st_mode
        except (OSError, ValueError):
            # Only a path that does not exist literally is a glob: `a[1].txt` may be a real name.
            return self._glob(_parts(logical)) if _GLOB_META.search(candidate) else None
        if stat.S_ISDIR(mode):
            return self._walk(real, logical, None)
        return [_Found(logical, real if stat.S_ISREG(mode) else None)]

    def _glob(self, pattern: list[str]) -> list[_Found] | None:
        static: list[str] = []
        for segment in pattern:
            if _GLOB_META.search(segment):
                break
            static.append(segment)
        magic = pattern[len(static) :]
        start = os.path.realpath(Path(self.root, *static))
        if not Path(start).is_dir():
            return None
        # Without `**` the match depth is fixed, so `@*.md` never walks the whole tree.
        depth = None if "**" in magic else len(magic)
        found = [
            item
            for item in self._walk(start, "/".join(static), depth)
            if _segments_match(magic, _parts(item.label)[len(static) :])
        ]
        return found or None

    def _walk(self, start: str, start_label: str, max_depth: int | None) -> list[_Found]:
        """Regular files under `start` (sorted), skipping SKIP_DIRS; symlinks are followed only inside the root."""
        key = (start, start_label, max_depth)
        if key in self.walks:
            return self.walks[key]
        found: list[_Found] = []
        visited = {start}  # real dirs already walked: symlink loops end here
        stack = [(start, start_label, 0)]
        while stack:
            directory, label, depth = stack.pop()
            try:
                with os.scandir(directory) as listing:
                    entries = list(listing)
            except OSError as exc:
                self.unreadable.setdefault(label or ".", exc.strerror or type(exc).__name__)
                continue
            for entry in entries:
                child = f"{label}/{entry.name}" if label else entry.name
                kind = self._kind(entry)
                if kind is None:
                    continue  # dangling link inside the root: nothing to inline
                real, mode = kind
                if not inside(real, self.root):
                    found.append(_Found(child, None))  # never followed, only reported
                elif stat.S_ISDIR(mode):
                    if entry.name in SKIP_DIRS or real in visited or (max_depth is not None and depth + 1 >= max_depth):
                        continue
                    visited.add(real)
                    stack.append((real, child, depth + 1))
                elif stat.S_ISREG(mode) and not (_is_secret(entry.name) or _is_secret(Path(real).name)):
                    found.append(_Found(child, real))
                else:
                    found.append(_Found(child, None))  # special file, secret, or an unresolvable link (loop)
        found.sort(key=lambda item: _parts(item.label))
        self.walks[key] = found
        return found

    @staticmethod
    def _kind(entry: os.DirEntry[str]) -> tuple[str, int] | None:
        """(realpath, mode) of a walked entry; None for a dangling link. `entry.path` is real unless it is a link."""
        if not entry.is_symlink():
            # d_type answers without a syscall: the walk of a large tree stays cheap.
            if entry.is_dir(follow_symlinks=False):
                return entry.path, stat.S_IFDIR
            return entry.path, stat.S_IFREG if entry.is_file(follow_symlinks=False) else 0
        real = os.path.realpath(entry.path)
        try:
            return real, Path(real).stat().st_mode
        except FileNotFoundError:
            return None
        except OSError:
            return real, 0  # e.g. a symlink loop: reported as skipped, never read

    def include(self, found: Iterable[_Found]) -> None:
        for item in found:
            if item.real is None:
                self.skipped.setdefault(item.label)
            elif item.real not in self.seen:
                self.seen.add(item.real)
                self._add_file(item.label, item.real)

    def _add_file(self, label: str, real: str) -> None:
        remaining = MAX_PROMPT_BYTES - self.spent
        try:
            fd = open_jailed(real, [self.root])  # a folder on the way swapped for a link out since the walk: not read
        except OutsideRoots:
            self.skipped.setdefault(label)
            return
        except OSError as exc:
            self.unreadable.setdefault(label, exc.strerror or type(exc).__name__)
            return
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                self.skipped.setdefault(label)
                return
            # Decide from the size first, so a spent budget never costs another read.
            smallest = info.st_size if info.st_size <= MAX_FILE_BYTES else MAX_FILE_BYTES - _UTF8_MAX_BACKOFF
            if smallest > remaining:
                self.omitted.append(label)
                return
            data = read_prefix(fd, MAX_FILE_BYTES + 1)
        except OSError as exc:
            self.unreadable.setdefault(label, exc.strerror or type(exc).__name__)
            return
        finally:
            os.close(fd)
        if b"\0" in data[:_SNIFF_BYTES]:
            self.skipped.setdefault(label)
            return
        cut = len(data)
        if cut > MAX_FILE_BYTES:
            cut = MAX_FILE_BYTES
            # Back off over UTF-8 continuation bytes so the kept prefix ends on a character boundary.
            while cut > MAX_FILE_BYTES - _UTF8_MAX_BACKOFF and data[cut] & 0xC0 == 0x80:
                cut -= 1
        try:
            content = data[:cut].decode("utf-8")
        except UnicodeDecodeError:
            self.skipped.setdefault(label)
            return
        if cut > remaining:
            self.omitted.append(label)
            return
        self.spent += cut
        if cut < len(data):
            self.truncated.append(label)
            limit = _size_label(MAX_FILE_BYTES)
            content += f"\n[TRUNCATED: {label} exceeds {limit}; showing the first {limit}]"
        self.files.append(label)
        self.blocks.append(f"----- BEGIN FILE: {label} -----\n{content}\n----- END FILE: {label} -----")

    def result(self, body: str) -> InlineResult:
        footer: list[str] = []
        if self.omitted:
            names = ", ".join(self.omitted[:_MAX_LISTED])
            if len(self.omitted) > _MAX_LISTED:
                names += f", … ({len(self.omitted) - _MAX_LISTED} more)"
            budget = _size_label(MAX_PROMPT_BYTES)
            footer.append(f"[OMITTED: {len(self.omitted)} file(s) over the {budget} prompt budget: {names}]")
        unreadable = list(self.unreadable.items())
        footer.extend(f"[UNREADABLE: {label} ({reason})]" for label, reason in unreadable[:_MAX_LISTED])
        if len(unreadable) > _MAX_LISTED:
            footer.append(f"[UNREADABLE: {len(unreadable) - _MAX_LISTED} more file(s) not listed]")
        parts = [body, *self.blocks]
        if footer:
            parts.append("\n".join(footer))
        return InlineResult(
            text="\n\n".join(parts),
            files=tuple(self.files),
            truncated=tuple(self.truncated),
            omitted=tuple(self.omitted),
            unreadable=tuple(self.unreadable),
            skipped=tuple(self.skipped),
        )
