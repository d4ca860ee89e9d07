"""A world for warm-session tests: the real Gemini CLI 0.61.0 in ACP mode against the project's Gemini API emulator,
in a temporary home. Each test opens its own pool (`async with world.pool() as pool`) so the pool's task group
lives in the test's own task."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest

from gemini_relay.backends.gemini_cli.acp import AcpBackend, WarmPool
from gemini_relay.backends.gemini_cli.decoder import GeminiCliDecoder
from gemini_relay.config import Settings
from gemini_relay.core.events import AgentEvent, TextDelta
from gemini_relay.core.spec import RunSpec
from tests.fakes.fake_gemini_api import FakeGeminiApi
from tests.fakes.gemini_home import isolated_cli_env
from tests.harness import TEST_MODEL, assert_no_processes, gemini_binary, processes_using

BOUND = 20.0  # every wait on the real CLI is bounded by this


@dataclass
class AcpWorld:
    base: Path
    project: Path
    home: Path
    api: FakeGeminiApi
    env: dict[str, str]

    def settings(self, **extra: str) -> Settings:
        return Settings.from_env({**self.env, **extra})

    @asynccontextmanager
    async def pool(self, **options: Any) -> AsyncIterator[WarmPool]:
        async with WarmPool(grace=2.0, **options) as pool:
            yield pool

    def backend(self, pool: WarmPool, **extra: str) -> AcpBackend:
        return AcpBackend(self.settings(**extra), pool)

    def spec(self, prompt: str, **fields: Any) -> RunSpec:
        return RunSpec(tool="gemini-ask", prompt=prompt, **{"cwd": self.project, **fields})

    def folder(self, name: str) -> Path:
        """A folder of the project for one test's runs (a shared world's tests do not see each other's files)."""
        path = self.project / name
        path.mkdir()
        return path

    def cold(self, prompt: str, *extra: str, cwd: Path | None = None) -> list[AgentEvent]:
        """A bare `gemini -p` (stream-json, prompt on stdin) decoded by the cold path's decoder."""
        cli_env = {k: v for k, v in self.env.items() if not k.startswith(("GEMINI_RELAY_", "GEMINI_MCP_"))}
        done = subprocess.run(
            [str(gemini_binary()), "--output-format", "stream-json", "-m", TEST_MODEL, *extra],
            input=prompt.encode(),
            env=cli_env,
            cwd=cwd or self.project,
            capture_output=True,
            timeout=BOUND * 3,
            start_new_session=True,
            check=False,
        )
        assert done.returncode == 0, done.stderr.decode(errors="replace")[-2000:]
        decoder = GeminiCliDecoder()
        return decoder.push(done.stdout) + decoder.flush()

    def cli_processes(self) -> list[int]:
        return processes_using(self.home)

    def kill_all(self) -> None:
        for pid in self.cli_processes():
            os.kill(pid, signal.SIGKILL)


async def collect(backend: AcpBackend, spec: RunSpec) -> list[AgentEvent]:
    with anyio.fail_after(BOUND * 3):
        return [event async for event in backend.run(spec)]


@asynccontextmanager
async def every_worker_thread_busy() -> AsyncIterator[None]:
    """The default worker-thread limiter with no token left (a busy host: other calls' file work)."""
    limiter = anyio.to_thread.current_default_thread_limiter()
    holders: list[object] = []
    while limiter.available_tokens:
        holders.append(object())
        await limiter.acquire_on_behalf_of(holders[-1])
    try:
        yield
    finally:
        for holder in holders:
            limiter.release_on_behalf_of(holder)


def text_of(events: list[AgentEvent]) -> str:
    return "".join(e.text for e in events if isinstance(e, TextDelta))


@pytest.fixture
def world(tmp_path: Path) -> Iterator[AcpWorld]:
    yield from _world(tmp_path)


@pytest.fixture(scope="module")
def module_world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AcpWorld]:
    """One world for a module whose tests share a warm pool (each in a folder of its own: `world.folder`)."""
    yield from _world(tmp_path_factory.mktemp("acp"))


def _world(tmp_path: Path) -> Iterator[AcpWorld]:
    project = tmp_path / "proj"
    project.mkdir()
    with FakeGeminiApi() as api:
        cli_env = isolated_cli_env(tmp_path, api.base_url)
        env = {
            "LANG": "C.UTF-8",
            **cli_env,
            "GEMINI_CLI_PATH": str(gemini_binary()),
            "GEMINI_RELAY_PROJECT_ROOT": str(project),
            "GEMINI_DEFAULT_MODEL": TEST_MODEL,
        }
        made = AcpWorld(tmp_path, project, Path(cli_env["GEMINI_CLI_HOME"]), api, env)
        try:
            yield made
        finally:
            try:
                assert_no_processes(made.home)
            finally:
                made.kill_all()
