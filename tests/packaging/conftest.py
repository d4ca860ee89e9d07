"""The release artifacts, built once per test session (shared by pytest-xdist's workers)."""

from __future__ import annotations

import pytest

from tests.packaging.artifacts import Dist, build_dist, once, session_root


@pytest.fixture(scope="session")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Dist:
    return once(session_root(tmp_path_factory), "dist", build_dist)
