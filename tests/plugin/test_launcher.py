"""The plugin's launcher starts the relay from the first place that has one: GEMINI_RELAY_COMMAND, then gemini-relay
on PATH, then the published package through uvx; with none it exits 127 saying how to get one."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.plugin.gate import PLUGIN

LAUNCHER = PLUGIN / "bin" / "gemini-relay-launch"


def stand_in(directory: Path, name: str) -> Path:
    """An executable `name` that prints its name and arguments."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(f'#!/bin/sh\necho "{name} $*"\n', encoding="utf-8")
    path.chmod(0o755)
    return path


def launch(path: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["/bin/sh", str(LAUNCHER), "--version"],
        capture_output=True,
        text=True,
        env={"PATH": path, **env},
        timeout=30,
        check=False,
    )


def test_the_configured_command_wins_over_path_and_uvx(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    stand_in(bin_dir, "gemini-relay")
    stand_in(bin_dir, "uvx")
    chosen = stand_in(tmp_path / "chosen", "my-relay")
    done = launch(f"{bin_dir}:/usr/bin:/bin", GEMINI_RELAY_COMMAND=str(chosen))
    assert done.stdout == "my-relay --version\n"


def test_gemini_relay_on_path_comes_before_uvx(tmp_path: Path) -> None:
    stand_in(tmp_path, "gemini-relay")
    stand_in(tmp_path, "uvx")
    assert launch(f"{tmp_path}:/usr/bin:/bin").stdout == "gemini-relay --version\n"


def test_without_an_installed_relay_the_published_package_runs_through_uvx(tmp_path: Path) -> None:
    stand_in(tmp_path, "uvx")
    assert launch(f"{tmp_path}:/usr/bin:/bin").stdout == "uvx gemini-relay --version\n"


def test_with_no_relay_at_all_it_exits_127_saying_how_to_get_one(tmp_path: Path) -> None:
    done = launch(str(tmp_path))
    assert done.returncode == 127
    assert "set GEMINI_RELAY_COMMAND" in done.stderr and "uvx" in done.stderr
