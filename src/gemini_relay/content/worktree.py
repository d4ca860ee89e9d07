"""Isolated write runs: each run works in a fresh `git worktree` on its own branch from HEAD, kept under the relay's
state dir (`<state>/worktrees/<name>`, never inside the project), so what the agent writes never lands in the user's
tree until gemini-apply applies its patch.

Uncommitted changes are refused, not carried over: the worktree starts from HEAD, so a run on a dirty tree would
work on other files than the user sees and its patch could not be told from their own edits. Each worktree has a
record beside it (`<name>.json`: repository, base commit, creator); the jobs that ran in it name it as their cwd.
Git runs as a supervised child (git_diff.run_git) with no repository hooks and no commit signing.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import shutil
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from gemini_relay.content.git_diff import (
    FileChange,
    GitError,
    GitUnavailable,
    NotARepository,
    git_env,
    parse_numstat,
    run_git,
)
from gemini_relay.errors import InputError
from gemini_relay.supervise.liveness import ProcessInfo, describe

__all__ = ["BRANCH_PREFIX", "Changes", "Worktree", "WorktreeRefused", "Worktrees"]

BRANCH_PREFIX = "gemini-relay/"
BRANCH_PATTERN = r"^gemini-relay/wt-[0-9a-f]{12}$"
_NAME = re.compile(r"^wt-[0-9a-f]{12}$")
_SHOWN_PATHS = 5  # uncommitted or conflicting files named in a refusal
# Passed as GIT_CONFIG_* so they override any repository or user setting: the relay's own git calls run none of the
# project's hooks (worktree add runs post-checkout) and never wait on a signing key.
_OVERRIDES = {
    "core.hooksPath": os.devnull,
    "commit.gpgSign": "false",
    "user.name": "gemini-relay",
    "user.email": "gemini-relay@localhost",
}
_APPLY_FLAGS = ("--binary", "--whitespace=nowarn")
# `git apply --check`'s stderr: the files it could not patch (a hunk that failed, a file that exists or is missing).
_FAILED_FILE = re.compile(
    r"^error: (?:patch failed: (.+?):\d+|(.+?): (?:patch does not apply|already exists in (?:the )?working "
    r"directory|does not exist in index|No such file or directory))$",
    re.M,
)


class WorktreeRefused(InputError):
    """isolation 'worktree' cannot be used here (not a repository, uncommitted changes, no commit, no git)."""


@dataclass(frozen=True)
class Worktree:
    name: str  # wt-<12 hex>, chosen by the relay
    repo: Path  # the project's repository (its top level)
    path: Path  # the worktree's top level, under the state dir
    base: str  # the commit it started from
    subdir: str  # the project root, relative to the repository top ("" when they are one)
    created_at: float
    owner: ProcessInfo | None

    @property
    def branch(self) -> str:
        return BRANCH_PREFIX + self.name

    @property
    def cwd(self) -> Path:
        """Where the run works: the project root's place in the worktree."""
        return self.path / self.subdir if self.subdir else self.path

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data.update(repo=str(self.repo), path=str(self.path), owner=asdict(self.owner) if self.owner else None)
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Worktree:
        owner = data.get("owner")
        return cls(
            name=str(data["name"]),
            repo=Path(data["repo"]),
            path=Path(data["path"]),
            base=str(data["base"]),
            subdir=str(data.get("subdir", "")),
            created_at=float(data["created_at"]),
            owner=ProcessInfo(**owner) if owner else None,
        )


@dataclass(frozen=True)
class Changes:
    """What the run changed, committed on its branch: numstat rows, git's --stat text and the binary-safe patch."""

    files: list[FileChange]
    stat: str
    raw: bytes  # the patch as git wrote it: what gemini-apply feeds to `git apply`
    cut: bool  # the patch is longer than asked for (the branch holds all of it)

    @property
    def patch(self) -> str:
        return self.raw.decode("utf-8", errors="replace")


class Worktrees:
    """The worktrees of one state dir: create, read back, diff, apply, discard (reaping is worktree_reap.py)."""

    def __init__(self, state_dir: Path, environ: Mapping[str, str]) -> None:
        self.root = state_dir / "worktrees"
        overrides = {"GIT_CONFIG_COUNT": str(len(_OVERRIDES))}
        for i, (key, value) in enumerate(_OVERRIDES.items()):
            overrides.update({f"GIT_CONFIG_KEY_{i}": key, f"GIT_CONFIG_VALUE_{i}": value})
        self.env = {**git_env(environ), **overrides}

    async def create(self, project_root: Path) -> Worktree:
        """A new worktree of the project's repository at HEAD, on a new branch.

        Raises:
            WorktreeRefused: not a git repository, no commit yet, uncommitted changes, or git missing.
        """
        top, base = await self._clean_head(project_root)
        self.root.mkdir(parents=True, exist_ok=True, mode=0o700)
        name = "wt-" + secrets.token_hex(6)
        subdir = os.path.relpath(project_root, top)
        worktree = Worktree(
            name=name,
            repo=top,
            path=self.root / name,
            base=base,
            subdir="" if subdir == "." else subdir,
            created_at=time.time(),
            owner=describe(os.getpid()),
        )
        self._write(worktree)  # first: a crash from here on leaves a record the reaper finds
        try:
            await run_git(["worktree", "add", "-q", "-b", worktree.branch, str(worktree.path), base], top, self.env)
        except GitError:
            self._record(name).unlink(missing_ok=True)
            raise
        return worktree

    async def _clean_head(self, project_root: Path) -> tuple[Path, str]:
        refused = "isolation 'worktree' refused"
        try:
            raw, _ = await run_git(["rev-parse", "--show-toplevel"], project_root, self.env)
            top = Path(raw.decode().strip()).resolve()
            try:
                head, _ = await run_git(["rev-parse", "--verify", "HEAD^{commit}"], top, self.env)
            except GitError:
                raise WorktreeRefused(f"{refused}: the repository at {top} has no commit yet to start from") from None
            status, _ = await run_git(["status", "--porcelain", "-z", "--untracked-files=normal"], top, self.env)
        except NotARepository:
            raise WorktreeRefused(
                f"{refused}: {project_root} is not inside a git repository; a worktree needs one (run without "
                "isolation, or `git init` and commit first)"
            ) from None
        except GitUnavailable as exc:
            raise WorktreeRefused(f"{refused}: {exc}") from None
        dirty = [entry[3:] for entry in status.decode("utf-8", errors="replace").split("\0") if len(entry) > 3]
        if dirty:
            more = len(dirty) - _SHOWN_PATHS
            shown = ", ".join(dirty[:_SHOWN_PATHS]) + (f" and {more} more" if more > 0 else "")
            raise WorktreeRefused(
                f"{refused}: the project has uncommitted changes ({shown}). The worktree starts from HEAD and "
                "uncommitted changes are not carried over: commit them first, or run without isolation"
            )
        return top, head.decode().strip()

    def find(self, branch: str) -> Worktree:
        """The worktree of a branch this relay made. Raises InputError when there is none (discarded or expired)."""
        name = branch.removeprefix(BRANCH_PREFIX)
        record = self._record(name) if _NAME.fullmatch(name) else None
        try:
            if record is None:
                raise FileNotFoundError(branch)
            return Worktree.from_json(json.loads(record.read_text(encoding="utf-8")))
        except (OSError, ValueError, KeyError, TypeError):
            raise InputError(
                f"No worktree for branch {branch!r}: it was discarded, expired with its job, or never made here"
            ) from None

    def records(self) -> list[Worktree]:
        found: list[Worktree] = []
        for record in sorted(self.root.glob("wt-*.json")) if self.root.is_dir() else []:
            with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
                found.append(Worktree.from_json(json.loads(record.read_text(encoding="utf-8"))))
        return found

    def containing(self, cwd: Path) -> Worktree | None:
        """The worktree a run's working directory lies in, if any."""
        if not cwd.is_relative_to(self.root):
            return None
        return next((w for w in self.records() if cwd.is_relative_to(w.path)), None)

    async def changes(self, worktree: Worktree, *, limit: int | None = None) -> Changes:
        """Commit what the run left uncommitted on its branch, then its diff from the base (patch up to `limit`)."""
        where = worktree.path
        status, _ = await run_git(["status", "--porcelain", "-z", "--untracked-files=all"], where, self.env)
        if status:
            await run_git(["add", "-A"], where, self.env)
            message = "gemini-relay: the changes of an isolated run"
            await run_git(["commit", "-q", "--no-verify", "-m", message], where, self.env)
        span = (worktree.base, "HEAD")
        numstat, _ = await run_git(["diff", "--numstat", "-z", "-M", *span, "--"], where, self.env)
        stat, _ = await run_git(["diff", "--stat=100", "--no-color", "-M", *span, "--"], where, self.env)
        flags = ("--binary", "--full-index", "--no-color", "--no-ext-diff", "--no-textconv", "-M")
        patch, cut = await run_git(["diff", *flags, *span, "--"], where, self.env, limit=limit)
        return Changes(parse_numstat(numstat), stat.decode("utf-8", errors="replace").rstrip(), patch, cut)

    async def apply_patch(self, worktree: Worktree) -> Changes:
        """Apply the branch's patch to the project's working tree (not the index), after a dry run.

        Raises:
            InputError: nothing to apply, or the patch does not apply cleanly (the conflicting files named; nothing
                was changed).
        """
        changes = await self.changes(worktree)
        if not changes.files:
            raise InputError(f"Nothing to apply: the run on {worktree.branch} changed no file")
        patch = changes.raw
        try:
            await run_git(["apply", "--check", *_APPLY_FLAGS, "-"], worktree.repo, self.env, stdin=patch)
        except GitError as exc:
            files = sorted({a or b for a, b in _FAILED_FILE.findall(exc.stderr)})
            named = ", ".join(files[:_SHOWN_PATHS]) if files else "(git named none)"
            raise InputError(
                f"gemini-apply refused: the patch of {worktree.branch} does not apply cleanly to the working tree; "
                f"conflicting files: {named}. Nothing was changed. Resolve them and apply again, or merge the "
                f"branch yourself (git merge {worktree.branch})."
            ) from None
        await run_git(["apply", *_APPLY_FLAGS, "-"], worktree.repo, self.env, stdin=patch)
        return changes

    async def discard(self, worktree: Worktree) -> None:
        """Remove the worktree, its branch and its record; what is already gone is skipped."""
        if worktree.path.parent != self.root or not _NAME.fullmatch(worktree.path.name):
            raise InputError(f"{worktree.path} is not a worktree of this relay")  # never removes anything else
        if worktree.repo.is_dir():
            with contextlib.suppress(GitError):
                await run_git(["worktree", "remove", "--force", "--force", str(worktree.path)], worktree.repo, self.env)
        shutil.rmtree(worktree.path, ignore_errors=True)
        if worktree.repo.is_dir():
            with contextlib.suppress(GitError):
                await run_git(["worktree", "prune"], worktree.repo, self.env)
            with contextlib.suppress(GitError):
                await run_git(["branch", "-D", worktree.branch], worktree.repo, self.env)
        self._record(worktree.name).unlink(missing_ok=True)

    def _record(self, name: str) -> Path:
        return self.root / f"{name}.json"

    def _write(self, worktree: Worktree) -> None:
        record = self._record(worktree.name)
        part = record.with_suffix(".part")
        part.write_text(json.dumps(worktree.to_json()), encoding="utf-8")
        part.replace(record)
