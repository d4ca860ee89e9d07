"""Deps.resolve_cwd: a per-call working directory is realpath-resolved and, when roots are configured, jailed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gemini_relay.app import build_deps
from gemini_relay.config import Settings
from gemini_relay.errors import InputError
from gemini_relay.tools.common.context import Deps


def deps(tmp_path: Path, **env: str) -> Deps:
    project = tmp_path / "proj"
    (project / "sub").mkdir(parents=True, exist_ok=True)
    settings = Settings.from_env({"GEMINI_RELAY_STATE_DIR": str(tmp_path / "state"), **env}, cwd=project)
    return build_deps(settings)


def test_no_cwd_is_the_project_root_and_a_relative_one_is_taken_from_it(tmp_path: Path) -> None:
    d = deps(tmp_path)
    assert d.resolve_cwd(None, "cwd") == d.settings.project_root
    assert d.resolve_cwd("sub", "cwd") == d.settings.project_root / "sub"


def test_a_symlinked_cwd_resolves_to_its_real_directory(tmp_path: Path) -> None:
    d = deps(tmp_path)
    link = tmp_path / "link"
    link.symlink_to(d.settings.project_root / "sub")
    assert d.resolve_cwd(str(link), "cwd") == d.settings.project_root / "sub"


@pytest.mark.parametrize("raw", ["missing", "a\x00b", "x" * 5000])
def test_a_missing_or_malformed_cwd_is_refused_naming_the_field(tmp_path: Path, raw: str) -> None:
    with pytest.raises(InputError) as caught:
        deps(tmp_path).resolve_cwd(raw, "workingDirectory")
    assert caught.value.field == "workingDirectory"


def test_outside_the_allowed_roots_a_cwd_is_refused_even_through_a_symlink(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    d = deps(tmp_path, GEMINI_RELAY_ALLOWED_ROOTS=os.pathsep.join([str(tmp_path / "proj")]))
    assert d.resolve_cwd("sub", "cwd") == d.settings.project_root / "sub"
    sneaky = d.settings.project_root / "sneaky"
    sneaky.symlink_to(outside)
    for raw in (str(outside), "sneaky", "../outside"):
        with pytest.raises(InputError, match="outside GEMINI_RELAY_ALLOWED_ROOTS"):
            d.resolve_cwd(raw, "cwd")
