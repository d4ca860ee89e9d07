"""An isolated world for driving the fake agy: a temp HOME and project, and an `agy` wrapper that sets the fake's knobs.

The backend passes the child only an allowlisted environment, so knobs travel in the wrapper script, not the env.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from gemini_relay.backends.agy.backend import AgyBackend
from gemini_relay.config import Settings

FAKE_AGY = Path(__file__).resolve().parents[2] / "fakes" / "fake_agy.py"


class Clock:
    """A monotonic clock the test moves (quota readings age without waiting)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@dataclass
class AgyWorld:
    base: Path
    home: Path
    project: Path
    bin_dir: Path
    log_path: Path

    @property
    def state_dir(self) -> Path:
        return self.home / ".gemini" / "antigravity-cli"

    @property
    def agy(self) -> Path:
        return self.bin_dir / "agy"

    def install(self, **knobs: str) -> Path:
        """(Re)write the `agy` wrapper with FAKE_AGY_<KNOB> settings, e.g. install(help="old", version="1.1.15")."""
        exports = "".join(f"export FAKE_AGY_{k.upper()}={shlex.quote(v)}\n" for k, v in knobs.items())
        self.agy.write_text(
            f"#!/bin/sh\nexport FAKE_AGY_LOG={shlex.quote(str(self.log_path))}\n{exports}"
            f'exec {shlex.quote(sys.executable)} {shlex.quote(str(FAKE_AGY))} "$@"\n',
            encoding="utf-8",
        )
        self.agy.chmod(0o755)
        return self.agy

    def settings(self, **env: str) -> Settings:
        base = {
            "HOME": str(self.home),
            "PATH": f"{self.bin_dir}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}",
            "LANG": "C.UTF-8",
            "GEMINI_RELAY_PROJECT_ROOT": str(self.project),
            "AGY_CLI_PATH": str(self.agy),
            "GEMINI_RELAY_KILL_GRACE": "0.5",
        }
        return Settings.from_env({**base, **env})

    def backend(self, **env: str) -> AgyBackend:
        return AgyBackend(self.settings(**env))

    def log(self) -> list[dict[str, Any]]:
        if not self.log_path.exists():
            return []
        return [json.loads(line) for line in self.log_path.read_text(encoding="utf-8").splitlines() if line]

    def runs(self) -> list[dict[str, Any]]:
        """The logged starts of model runs (not --version, --help or subcommands)."""
        return [e for e in self.log() if e["event"] == "start" and ("-p" in e["argv"] or "--input-format" in e["argv"])]


@pytest.fixture
def world(tmp_path: Path) -> AgyWorld:
    home, project, bin_dir = tmp_path / "home", tmp_path / "project", tmp_path / "bin"
    for path in (home, project, bin_dir):
        path.mkdir()
    made = AgyWorld(tmp_path, home, project, bin_dir, tmp_path / "fake-agy.log")
    made.install()
    return made
