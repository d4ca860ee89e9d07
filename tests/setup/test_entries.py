"""What an entry starts: the running `gemini-relay` script by absolute path (a link kept a link), else the one
beside this Python, else this Python with `-m gemini_relay`."""

from __future__ import annotations

from pathlib import Path

import pytest

from gemini_relay.setup.entries import launcher
from tests.executables import shell_script


def test_the_running_script_is_named_by_absolute_path_and_a_link_stays_a_link(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = shell_script(tmp_path / "venv" / "bin" / "gemini-relay")
    link = tmp_path / "bin" / "gemini-relay"
    link.parent.mkdir()
    link.symlink_to(real)
    monkeypatch.chdir(tmp_path)
    assert launcher("bin/gemini-relay", "/usr/bin/python3") == (str(link), ())


def test_without_the_script_it_is_the_one_beside_python_else_python_dash_m(tmp_path: Path) -> None:
    python = tmp_path / "venv" / "bin" / "python"
    assert launcher("/x/__main__.py", str(python)) == (str(python), ("-m", "gemini_relay"))
    beside = shell_script(tmp_path / "venv" / "bin" / "gemini-relay")
    assert launcher("/x/__main__.py", str(python)) == (str(beside), ())
