"""A temporary home for `gemini-relay setup`, the command run in it (in process, through the real argument parser),
and snapshots of the home to compare byte for byte. The real home is never looked at: HOME, PATH and every
variable that moves a client's config (XDG_CONFIG_HOME, CODEX_HOME, CLAUDE_CONFIG_DIR, ...) point into tmp_path."""

from __future__ import annotations

import json
import stat
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from gemini_relay.cli import main

MOVED_BY = (
    "XDG_CONFIG_HOME",
    "XDG_STATE_HOME",
    "CODEX_HOME",
    "CLAUDE_CONFIG_DIR",
    "GEMINI_CLI_HOME",
    "APPDATA",
    "GEMINI_RELAY_HTTP_TOKEN",
)
RELAY = str(Path(sys.executable).parent / "gemini-relay")  # what the entries start: this installation's script
TRUST = {"GEMINI_CLI_TRUST_WORKSPACE": "true"}


@dataclass(frozen=True)
class Outcome:
    code: int
    out: str


@dataclass
class SetupHome:
    home: Path
    state: Path
    project: Path
    capsys: pytest.CaptureFixture[str]

    def setup(self, *args: str) -> Outcome:
        code = main(["setup", *args])
        return Outcome(code, self.capsys.readouterr().out)

    def file(self, relative: str, text: str | None = None) -> Path:
        """`~/relative`, written with `text` first when given."""
        path = self.home / relative
        if text is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        return path

    def json(self, relative: str) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(self.file(relative).read_text(encoding="utf-8"))
        return data

    def record(self) -> dict[str, Any] | None:
        path = self.state / "setup.json"
        if not path.exists():
            return None
        data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        return data

    def snapshot(self, *, skip: tuple[str, ...] = ()) -> dict[str, tuple[str, bytes, int]]:
        return snapshot(self.home, skip=skip)


def snapshot(root: Path, *, skip: tuple[str, ...] = ()) -> dict[str, tuple[str, bytes, int]]:
    """Every file, folder and link under `root`: kind, bytes (a link: its target) and mode, by relative path."""
    found: dict[str, tuple[str, bytes, int]] = {}
    for path in sorted(root.rglob("*")):
        rel = str(path.relative_to(root))
        if rel.startswith(skip):
            continue
        info = path.lstat()
        if stat.S_ISLNK(info.st_mode):
            found[rel] = ("link", str(path.readlink()).encode(), 0)
        elif stat.S_ISDIR(info.st_mode):
            found[rel] = ("dir", b"", stat.S_IMODE(info.st_mode))
        else:
            found[rel] = ("file", path.read_bytes(), stat.S_IMODE(info.st_mode))
    return found
