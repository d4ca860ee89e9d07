"""The write guardrail: did the agent change the working tree during a run that should only have answered?

Before and after the run, every tracked and untracked-but-not-ignored file under the project root is stat'ed (size
and mtime, nanoseconds) and `git status --porcelain` is recorded; any difference names a changed file. Size plus
mtime catches further edits to an already-dirty file, which git status alone would miss. Ignored files (build output,
caches) are not watched. A repository the snapshot cannot read fails closed: the run's edits are not trusted.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import anyio

from gemini_relay.content.git_diff import GitUnavailable, NotARepository, run_git

__all__ = ["Snapshot", "WriteCheck", "compare", "take_snapshot"]

MAX_LISTED = 20  # changed files named in a notice; the rest are counted


@dataclass(frozen=True)
class Snapshot:
    files: dict[str, tuple[int, int] | None]  # path -> (size, mtime_ns), None when it vanished while listed
    status: frozenset[bytes]  # `git status --porcelain -z` entries


@dataclass(frozen=True)
class WriteCheck:
    """The verdict: `changed` files, or `error` when the tree could not be compared (fail closed)."""

    changed: tuple[str, ...] = ()
    error: str | None = None

    @property
    def clean(self) -> bool:
        return self.error is None and not self.changed

    def describe(self) -> str:
        if self.error is not None:
            return f"gemini-relay could not check whether the agent wrote files ({self.error})"
        shown = ", ".join(self.changed[:MAX_LISTED])
        more = f" and {len(self.changed) - MAX_LISTED} more" if len(self.changed) > MAX_LISTED else ""
        return f"The agent changed files in the working tree during this run: {shown}{more}"


async def take_snapshot(root: Path, env: Mapping[str, str]) -> Snapshot | None:
    """The tree's state, or None without a git working tree or without git (there is nothing to compare with).

    Raises:
        GitError: git failed inside a repository.
    """
    try:
        tracked, _ = await run_git(["ls-files", "-z", "--", "."], root, env)
    except (NotARepository, GitUnavailable):
        return None
    others, _ = await run_git(["ls-files", "--others", "--exclude-standard", "-z", "--", "."], root, env)
    status, _ = await run_git(["status", "--porcelain", "-z", "--untracked-files=all", "--", "."], root, env)
    paths = [p.decode("utf-8", errors="surrogateescape") for p in (tracked + b"\0" + others).split(b"\0") if p]
    files = await anyio.to_thread.run_sync(_stat_all, root, paths)
    return Snapshot(files, frozenset(e for e in status.split(b"\0") if e))


def compare(before: Snapshot, after: Snapshot) -> WriteCheck:
    changed = {path for path, stat in before.files.items() if after.files.get(path, ...) != stat}
    changed |= after.files.keys() - before.files.keys()
    for entry in before.status ^ after.status:
        # `XY path`; a rename's source follows as its own entry and is picked up by the ls-files comparison.
        changed.add(entry[3:].decode("utf-8", errors="surrogateescape") if len(entry) > 3 else entry.decode())
    return WriteCheck(tuple(sorted(_printable(p) for p in changed)))


def _stat_all(root: Path, paths: list[str]) -> dict[str, tuple[int, int] | None]:
    found: dict[str, tuple[int, int] | None] = {}
    for rel in paths:
        try:
            st = os.lstat(root / rel)
        except OSError:
            found[rel] = None
            continue
        found[rel] = (st.st_size, st.st_mtime_ns)
    return found


def _printable(path: str) -> str:
    return path.encode("utf-8", errors="surrogateescape").decode("utf-8", errors="replace")
