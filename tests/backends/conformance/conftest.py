"""The conformance parametrisation: every behaviour test runs once per backend (`upstream`), and a combination a
backend cannot produce is marked skip with its reason (adapters.UNSUPPORTED) instead of being left out."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.backends.conformance.adapters import (
    BACKENDS,
    UNSUPPORTED,
    Adapter,
    Behaviour,
    SharedWarm,
    make_adapter,
    shared_warm,
)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "upstream" not in metafunc.fixturenames:
        return
    marker = metafunc.definition.get_closest_marker("behaviour")
    assert marker is not None, f"{metafunc.function.__name__} needs @pytest.mark.behaviour(Behaviour.X)"
    behaviour: Behaviour = marker.args[0]
    params = []
    for name in BACKENDS:
        reason = UNSUPPORTED[name].get(behaviour)
        marks = [pytest.mark.skip(reason=f"{name}: {reason}")] if reason else []
        params.append(pytest.param(name, id=name, marks=marks))
    metafunc.parametrize("upstream", params, indirect=True)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "behaviour(b): the upstream behaviour a conformance test asks every backend for")


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"  # module scope: the shared warm pool's task group lives in the module's one event loop


@pytest.fixture(scope="module")
async def warm(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[SharedWarm]:
    """One warm CLI for the module's acp tests (booted by the first of them; the others find it warm)."""
    async with shared_warm(tmp_path_factory.mktemp("acp-shared")) as shared:
        yield shared


@pytest.fixture
def upstream(request: pytest.FixtureRequest, tmp_path: Path, warm: SharedWarm) -> Adapter:
    return make_adapter(str(request.param), tmp_path, warm)
