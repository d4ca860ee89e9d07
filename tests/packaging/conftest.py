"""The release artifacts, built once per test session (shared by pytest-xdist's workers)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.packaging.artifacts import Dist, build_dist, offline_env, once, pack_bundle, session_root


@pytest.fixture(scope="session")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Dist:
    return once(session_root(tmp_path_factory), "dist", build_dist)


@pytest.fixture(scope="session")
def bundle(tmp_path_factory: pytest.TempPathFactory, dist: Dist) -> Path:
    def make(out: Path) -> Path:
        return pack_bundle(dist, out, offline_env(out / "home"))

    return once(session_root(tmp_path_factory), "bundle", make)
