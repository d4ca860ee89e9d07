"""The in-memory tier: the real server (RelayServer(deps).build()) driven through the SDK's in-process client, with
a ScriptedBackend in place of the Gemini CLI, run by the one executor inside the server (GEMINI_RELAY_HOST=off, the
same code as the relay host's). No subprocess is started: the child
PATH is an empty directory (so the changeMode guardrail finds no git), and every test fails if anything spawns
(an audit hook sees each subprocess.Popen / os.posix_spawn / os.exec*), unless it is marked `spawns_git`.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.session import ElicitationFnT

from gemini_relay.app import build_deps
from gemini_relay.config import Settings
from gemini_relay.core.vocabulary import BackendName
from gemini_relay.server.relay import RelayServer
from tests.fakes.fake_gemini_api import FakeGeminiApi
from tests.inmemory.scripted import ScriptedBackend

_SPAWN_EVENTS = frozenset({"subprocess.Popen", "os.posix_spawn", "os.exec", "os.fork", "os.system"})
_spawned: list[str] | None = None  # set while a test runs: what it spawned


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if _spawned is None or event not in _SPAWN_EVENTS:
        return
    if event == "subprocess.Popen" and not _resolvable(args):
        return  # an attempt that cannot start anything (no such binary on the child's PATH): no process exists
    _spawned.append(f"{event} {args[:2]!r}"[:200])


def _resolvable(args: tuple[Any, ...]) -> bool:
    executable, _argv, _cwd, env = args
    path = env.get("PATH", os.defpath) if isinstance(env, dict) else os.environ.get("PATH", os.defpath)
    return shutil.which(os.fsdecode(executable), path=path) is not None


sys.addaudithook(_audit)  # audit hooks cannot be removed; it records only while `_spawned` is a list


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "spawns_git: the test needs a git working tree (the review reads its diff)")


@pytest.fixture(autouse=True)
def no_subprocess(request: pytest.FixtureRequest) -> Iterator[None]:
    global _spawned
    _spawned = []
    try:
        yield
        spawned = _spawned
    finally:
        _spawned = None
    if request.node.get_closest_marker("spawns_git"):
        spawned = [s for s in spawned if "git" not in s]
    assert spawned == [], f"the in-memory tier spawned processes: {spawned}"


@dataclass
class InMemory:
    base: Path
    project: Path
    backend: ScriptedBackend
    env: dict[str, str] = field(default_factory=dict[str, str])

    def settings(self, **overrides: str) -> Settings:
        return Settings.from_env({**self.env, **overrides})

    def client(self, **overrides: str) -> AbstractAsyncContextManager[Client]:
        return self.session(overrides=overrides)

    def asking_client(
        self, elicitation: ElicitationFnT | None, **overrides: str
    ) -> AbstractAsyncContextManager[Client]:
        """`elicitation`: the client declares elicitation and answers with this callback."""
        return self.session(options={"elicitation_callback": elicitation}, overrides=overrides)

    @asynccontextmanager
    async def session(
        self, mode: str = "legacy", options: dict[str, Any] | None = None, overrides: dict[str, str] | None = None
    ) -> AsyncIterator[Client]:
        """A client in `mode` with `options` of its own (callbacks for elicitation, sampling, roots, logging)."""
        deps = build_deps(self.settings(**(overrides or {})), backends={BackendName("gemini"): self.backend})
        # legacy: the initialize handshake and JSON-RPC framing, as over stdio. The default in-process dispatch
        # (2026-07-28) hands the progress callback over without a progressToken in `_meta`, so the relay, which
        # sends keepalives only for a token, would send none.
        async with deps.serving(), anyio.create_task_group() as background:
            deps.background = background
            async with Client(RelayServer(deps).build(), mode=mode, **(options or {})) as client:
                yield client
            background.cancel_scope.cancel()


@pytest.fixture
def relay(tmp_path: Path) -> InMemory:
    return in_memory(tmp_path)


def in_memory(tmp_path: Path) -> InMemory:
    """A fresh in-memory world under `tmp_path`: a project, a home, an empty PATH and a state dir."""
    project, home, empty = tmp_path / "project", tmp_path / "home", tmp_path / "empty-bin"
    for path in (project, home, empty):
        path.mkdir()
    env = {
        "HOME": str(home),
        "PATH": str(empty),
        "LANG": "C.UTF-8",
        "GEMINI_RELAY_PROJECT_ROOT": str(project),
        "GEMINI_RELAY_STATE_DIR": str(tmp_path / "state"),
        "GEMINI_MCP_BACKEND": "gemini",
        "GEMINI_DEFAULT_MODEL": "gemini-2.5-pro",
        "GEMINI_RELAY_MIN_GAP_MS": "0",
        "GEMINI_RELAY_JITTER_MS": "0",
        "GEMINI_RELAY_HOST": "off",  # the executor in this process: scripted backends reach it, nothing is spawned
    }
    return InMemory(tmp_path, project, ScriptedBackend(), env)


# The receipt line every answer of a run ends with (format.receipt_line); tests of the text before it cut it off.
RECEIPT_LINE = re.compile(r"\n\n— (?P<model>.+?)(?: \(asked (?P<asked>[^)]+)\))? via (?P<backend>\S+)"
                          r"(?: \((?P<warm>warm|cold)\))? · [0-9.]+ s(?: · (?P<tokens>\d+) tokens)?"
                          r"(?P<partial> · partial)? · (?:job|run) (?P<job>[0-9a-f]+)$")  # fmt: skip


def without_receipt(text: str) -> str:
    """`text` without its receipt line, which must be there, last."""
    match = RECEIPT_LINE.search(text)
    assert match is not None, text
    return text[: match.start()]


def text_of(result: types.CallToolResult) -> str:
    assert len(result.content) == 1
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


@pytest.fixture
def emulator() -> Iterator[FakeGeminiApi]:
    """The project's Gemini API emulator, on a thread of this process (google-genai reaches it over HTTP)."""
    with FakeGeminiApi() as fake:
        yield fake


def on_the_api(api: FakeGeminiApi, **more: str) -> dict[str, str]:
    """The overrides that serve the real api backend (google-genai) from `api`: the model calls go over HTTP."""
    return {"GEMINI_MCP_BACKEND": "api", "GEMINI_API_KEY": "dummy", "GOOGLE_GEMINI_BASE_URL": api.base_url, **more}
