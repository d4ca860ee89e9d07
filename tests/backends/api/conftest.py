"""An isolated world for the api backend: the project's Gemini API emulator in-process, a temp state dir and key.

The backend reads its key and base URL from the settings' env, so nothing here touches os.environ or ~/.gemini.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import aclosing
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

from gemini_relay.backends.api import ApiBackend
from gemini_relay.config import Settings
from gemini_relay.core.events import AgentEvent, Finished, TextDelta
from gemini_relay.core.spec import RunSpec
from tests.fakes.fake_gemini_api import FakeGeminiApi

TEST_KEY = "test-key-abcd1234wxyz"
MODEL = "gemini-2.5-pro"


@dataclass
class ApiWorld:
    base: Path
    project: Path
    state: Path
    api: FakeGeminiApi

    def env(self, **overrides: str | None) -> dict[str, str]:
        env = {
            "HOME": str(self.base / "home"),
            "LANG": "C.UTF-8",
            "GEMINI_RELAY_PROJECT_ROOT": str(self.project),
            "GEMINI_RELAY_STATE_DIR": str(self.state),
            "GEMINI_API_KEY": TEST_KEY,
            "GOOGLE_GEMINI_BASE_URL": self.api.base_url,
        }
        for key, value in overrides.items():
            if value is None:
                env.pop(key, None)
            else:
                env[key] = value
        return env

    def settings(self, **overrides: str | None) -> Settings:
        return Settings.from_env(self.env(**overrides))

    def backend(self, *, stream: bool = True, **overrides: str | None) -> ApiBackend:
        return ApiBackend(self.settings(**overrides), stream=stream)

    def spec(self, prompt: str, **fields: Any) -> RunSpec:
        return replace(RunSpec(tool="gemini-ask", prompt=prompt, cwd=self.project, model=MODEL), **fields)


@pytest.fixture
def world(tmp_path: Path) -> Iterator[ApiWorld]:
    project, state = tmp_path / "project", tmp_path / "state"
    project.mkdir()
    (tmp_path / "home").mkdir()
    with FakeGeminiApi() as api:
        yield ApiWorld(tmp_path, project, state, api)


async def collect(backend: ApiBackend, spec: RunSpec) -> list[AgentEvent]:
    """Every event of one run (the error, if any, propagates)."""
    async with aclosing(backend.run(spec)) as events:
        return [event async for event in events]


def answer_of(events: list[AgentEvent]) -> str:
    return "".join(e.text for e in events if isinstance(e, TextDelta))


def finished(events: list[AgentEvent]) -> Finished:
    last = events[-1]
    assert isinstance(last, Finished), events
    return last
