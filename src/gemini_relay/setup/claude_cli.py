"""Claude Code through its own CLI: `claude mcp add-json -s user <name> -` (the entry on stdin, so a token never
shows in a process list) and `claude mcp remove -s user <name>`. The CLI takes Claude Code's lock on
`~/.claude.json` and writes it the way Claude Code does; setup reads the file only to compare entries.

Measured with Claude Code 2.1.332: the user scope is the top-level `mcpServers` of `$CLAUDE_CONFIG_DIR/.claude.json`
(else `~/.claude.json`); a write may leave a copy in `backups/` beside it (`~/.claude/backups/`), and the first
run of the CLI in a home writes first-start keys into the file. Setup notes those side files as its own, and
everything the CLI put in a folder that was missing before.
"""

from __future__ import annotations

import contextlib
import json
import signal
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gemini_relay.supervise.groups import signal_group

CLI_TIMEOUT = 60.0
# Editing its config needs no network: without these the CLI sends telemetry (and offline, leaves a
# ~/.claude/telemetry/1p_failed_events.*.json behind, measured with 2.1.332).
QUIET = {"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_TELEMETRY": "1", "DISABLE_AUTOUPDATER": "1"}
KILL_GRACE = 5.0


class CliFailed(Exception):
    """The `claude` command failed; the message says how, with the end of its stderr."""


def config_file(env: Mapping[str, str], home: Path) -> Path:
    folder = env.get("CLAUDE_CONFIG_DIR", "").strip()
    return (Path(folder).expanduser() if folder else home) / ".claude.json"


def side_folder(env: Mapping[str, str], home: Path) -> Path:
    """Where the CLI leaves copies of `.claude.json` when it rewrites it."""
    folder = env.get("CLAUDE_CONFIG_DIR", "").strip()
    return (Path(folder).expanduser() if folder else home / ".claude") / "backups"


@dataclass(frozen=True)
class Snapshot:
    """What existed in the side folder (and which of its folders were missing) before the CLI ran."""

    folder: Path
    files: frozenset[str]
    missing: tuple[Path, ...]

    @classmethod
    def take(cls, folder: Path) -> Snapshot:
        missing: list[Path] = []
        probe = folder
        while not probe.exists() and probe != probe.parent:
            missing.append(probe)
            probe = probe.parent
        files = frozenset(p.name for p in folder.iterdir()) if folder.is_dir() else frozenset()
        return cls(folder, files, tuple(reversed(missing)))

    def created(self) -> tuple[list[str], list[str]]:
        """The files and folders (outermost first) that appeared since the snapshot: new entries of the side
        folder, and everything inside a folder that was missing."""
        now = frozenset(p.name for p in self.folder.iterdir()) if self.folder.is_dir() else frozenset()
        files = {str(self.folder / name) for name in now - self.files}
        folders: list[str] = []
        made = [p for p in self.missing if p.exists()]
        if made:
            inside = sorted(made[0].rglob("*"), key=lambda p: len(p.parts))
            files |= {str(p) for p in inside if not p.is_dir()}
            folders = [str(p) for p in [made[0], *inside] if p.is_dir()]
        return sorted(files), folders


@dataclass(frozen=True)
class ClaudeCli:
    binary: str
    env: Mapping[str, str]
    cwd: Path

    def add(self, name: str, entry: Mapping[str, Any]) -> None:
        self._run(["mcp", "add-json", "-s", "user", name, "-"], json.dumps(entry))

    def remove(self, name: str) -> None:
        self._run(["mcp", "remove", "-s", "user", name], "")

    def _run(self, args: list[str], stdin: str) -> None:
        """Run the CLI in its own process group; on timeout the group gets SIGTERM, a grace, then SIGKILL."""
        command = [self.binary, *args]
        env = {**self.env, **QUIET}
        process = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            cwd=self.cwd,
            start_new_session=True,
        )
        try:
            out, err = process.communicate(stdin, timeout=CLI_TIMEOUT)
        except subprocess.TimeoutExpired:
            _stop(process)
            raise CliFailed(f"`claude {' '.join(args[:2])}` did not finish within {CLI_TIMEOUT:g}s") from None
        if process.returncode != 0:
            tail = (err.strip() or out.strip()).splitlines()[-3:]
            raise CliFailed(f"`claude {' '.join(args[:2])}` exited {process.returncode}: {' '.join(tail)}")


def _stop(process: subprocess.Popen[str]) -> None:
    signal_group(process.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.communicate(timeout=KILL_GRACE)
    signal_group(process.pid, signal.SIGKILL)  # whatever of the group outlived the grace
    process.wait()
