"""The `home` fixture: a temporary home with no client CLI on PATH (tests/setup/homes.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.setup.homes import MOVED_BY, SetupHome


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> SetupHome:
    user, state, project, bin_dir = (tmp_path / name for name in ("home", "state", "project", "bin"))
    for folder in (user, project, bin_dir):
        folder.mkdir()
    for name in MOVED_BY:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(user))
    monkeypatch.setenv("PATH", str(bin_dir))  # no client CLI on PATH: detection sees only the home's folders
    monkeypatch.setenv("GEMINI_RELAY_STATE_DIR", str(state))
    monkeypatch.chdir(project)
    return SetupHome(user, state, project, capsys)
