"""Real git repositories in temporary directories, for the review toolset's tests and bench (no git mocks)."""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

# Tests never read the developer's git configuration, and commits are reproducible.
GIT_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_AUTHOR_NAME": "Test",
    "GIT_AUTHOR_EMAIL": "test@example.com",
    "GIT_COMMITTER_NAME": "Test",
    "GIT_COMMITTER_EMAIL": "test@example.com",
    "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
    "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z",
}


class GitRepo:
    def __init__(self, root: Path) -> None:
        self.root = root

    @classmethod
    def create(cls, root: Path, files: dict[str, str | bytes] | None = None) -> GitRepo:
        """`git init` at `root` (branch main); with `files`, they are written and committed as the first commit."""
        root.mkdir(parents=True, exist_ok=True)
        repo = cls(root)
        repo.git("init", "-q", "-b", "main")
        if files:
            repo.write(files)
            repo.commit("initial")
        return repo

    def git(self, *args: str) -> str:
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(self.root), **GIT_ENV}
        done = subprocess.run(
            ["git", *args], cwd=self.root, env=env, capture_output=True, text=True, check=False, timeout=60
        )
        if done.returncode != 0:
            raise AssertionError(f"git {' '.join(args)} failed: {done.stderr}")
        return done.stdout

    def write(self, files: dict[str, str | bytes]) -> None:
        for rel, content in files.items():
            path = self.root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, bytes):
                path.write_bytes(content)
            else:
                path.write_text(content, encoding="utf-8")

    def commit(self, message: str = "change") -> None:
        self.git("add", "-A")
        self.git("commit", "-q", "--allow-empty", "-m", message)


def tree_hash(root: Path) -> str:
    """The project's files and their bytes, .git left out (the relay may add a worktree's admin entry there)."""
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file() and ".git" not in p.relative_to(root).parts):
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()
