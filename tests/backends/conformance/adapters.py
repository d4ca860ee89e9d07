"""One adapter per backend: it builds the backend in an isolated world and knows how to make its upstream behave a
given way — emulator scenarios (`[[fake:...]]`) for the Gemini CLI, the API and ACP, fake-agy markers (`[[agy:...]]`)
for agy. The behaviour tests (test_contract.py) are written once against this interface.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping
from contextlib import AbstractAsyncContextManager, aclosing, asynccontextmanager
from dataclasses import dataclass, field, replace
from enum import StrEnum
from pathlib import Path
from typing import Any

import anyio

from gemini_relay.backends.agy.backend import AgyBackend
from gemini_relay.backends.api import ApiBackend
from gemini_relay.backends.base import Backend
from gemini_relay.backends.gemini_cli.acp import AcpBackend, WarmPool
from gemini_relay.backends.gemini_cli.backend import GeminiCliBackend
from gemini_relay.config import Settings
from gemini_relay.core.events import AgentEvent, Finished, TextDelta
from gemini_relay.core.spec import RunSpec
from tests.backends.agy.conftest import FAKE_AGY, AgyWorld
from tests.fakes import fake_agy, fake_gemini_api
from tests.fakes.fake_gemini_api import FakeGeminiApi
from tests.fakes.gemini_home import isolated_cli_env
from tests.harness import TEST_MODEL, gemini_binary
from tests.procs import processes_with_env

STOP_BOUND = 10.0  # a closed run's upstream is gone within this


class Behaviour(StrEnum):
    """Upstream behaviours every adapter can be asked for (or names as one its upstream cannot produce)."""

    ANSWER = "answer"
    UNICODE = "unicode"
    CHUNKED = "chunked"  # an answer the upstream sends in several pieces
    QUOTA = "quota"  # HTTP 429 RESOURCE_EXHAUSTED / agy's quota error line
    SERVER_ERROR = "server_error"  # HTTP 500 / agy's ERROR result
    STALL = "stall"  # some answer text, then nothing until stopped
    EMPTY = "empty"  # a successful turn with no answer text
    HISTORY = "history"  # an answer that shows how many user turns the upstream saw
    UNHONOURED = "unhonoured"  # an explicitly-set option the backend cannot honour


def open_run(backend: Backend, spec: RunSpec) -> AsyncGenerator[AgentEvent, None]:
    """`backend.run(spec)`: an async generator, so `aclosing` can close it."""
    return backend.run(spec)


async def wait_until_gone(pids: Callable[[], list[int]], bound: float = STOP_BOUND) -> list[int]:
    """Poll /proc (bounded) until no process is left; returns what is still alive at the bound."""
    with anyio.move_on_after(bound):
        while pids():
            await anyio.sleep(0.05)
    return pids()


@dataclass
class Adapter:
    """How to drive one backend. `prompts` maps a behaviour to a prompt template (`{text}` is the caller's text)."""

    name: str
    base: Path
    enforces_deadline: bool  # False: the engine's deadline stops the run (jobs/engine/), the harness mirrors it
    prompts: Mapping[Behaviour, str]
    unicode_text: str
    chunked_text: str  # the answer of CHUNKED
    stall_text: str
    unhonoured: tuple[dict[str, Any], str]  # RunSpec fields the backend cannot honour, and the word its notice names
    # A hang's deadline: long enough for a started upstream to send its first text (a warm pool is warmed up first,
    # and a cold CLI's mirrored clock starts once it is up: see drive.drive).
    stall_deadline: float = 3.0
    project: Path = field(init=False)

    def __post_init__(self) -> None:
        self.project = self.base / "project"
        self.project.mkdir(parents=True, exist_ok=True)

    def spec(self, prompt: str, **fields: Any) -> RunSpec:
        return replace(RunSpec(tool="gemini-ask", prompt=prompt, cwd=self.project), **fields)

    def prompt(self, behaviour: Behaviour, text: str = "") -> str:
        return self.prompts[behaviour].format(text=text)

    def answer(self, text: str) -> tuple[str, str]:
        """A prompt whose answer is known, and that answer."""
        return self.prompt(Behaviour.ANSWER, text), self.expected_answer(text)

    def expected_answer(self, text: str) -> str:
        raise NotImplementedError

    def turns_seen(self, events: list[AgentEvent]) -> int:
        """How many user turns the upstream saw in a HISTORY run."""
        raise NotImplementedError

    def running(self) -> AbstractAsyncContextManager[Backend]:
        """The backend, live; on exit no upstream process of this test is left."""
        raise NotImplementedError

    def upstream_processes(self) -> list[int]:
        raise NotImplementedError

    async def warm_up(self, backend: Backend) -> None:
        """Before a timed run: start what a backend keeps between runs (a warm pool's process). Most keep nothing."""

    def run_processes(self) -> list[int]:
        """The processes that exist only for the current run (a warm pool's process serves the next one)."""
        return self.upstream_processes()

    async def assert_stopped(self, backend: Backend) -> None:
        """After a run was closed mid-answer: its upstream stopped (no process of the run left)."""
        left = await wait_until_gone(self.upstream_processes)
        assert left == [], f"{self.name}: processes left after close: {left}"


def _emulator_prompts() -> dict[Behaviour, str]:
    return {
        Behaviour.ANSWER: "[[fake:echo:{text}]]",
        Behaviour.UNICODE: "[[fake:unicode]]",
        Behaviour.CHUNKED: "[[fake:slow:0.05]]",
        Behaviour.QUOTA: "[[fake:quota]]",
        Behaviour.SERVER_ERROR: "[[fake:error:500]]",
        Behaviour.STALL: "[[fake:stall]]",
        Behaviour.EMPTY: "[[fake:empty]]",
        Behaviour.HISTORY: "[[fake:history]]",
        Behaviour.UNHONOURED: "[[fake:echo:{text}]]",
    }


def _history_turns(events: list[AgentEvent]) -> int:
    text = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert text.startswith("turns="), text
    return int(text.removeprefix("turns="))


class EmulatorAdapter(Adapter):
    """Shared by the backends that talk to the Gemini API emulator."""

    api: FakeGeminiApi | None = None

    def expected_answer(self, text: str) -> str:
        return text

    def turns_seen(self, events: list[AgentEvent]) -> int:
        return _history_turns(events)

    @asynccontextmanager
    async def _emulator(self) -> AsyncIterator[FakeGeminiApi]:
        with FakeGeminiApi() as api:
            self.api = api
            try:
                yield api
            finally:
                self.api = None


def cli_env(base: Path, project: Path, base_url: str) -> dict[str, str]:
    """The env of a Gemini CLI world in `base` (its home there) against the emulator at `base_url`."""
    return {
        "LANG": "C.UTF-8",
        **isolated_cli_env(base, base_url),
        "GEMINI_CLI_PATH": str(gemini_binary()),
        "GEMINI_RELAY_PROJECT_ROOT": str(project),
        "GEMINI_DEFAULT_MODEL": TEST_MODEL,
        "GEMINI_RELAY_KILL_GRACE": "2",
    }


def home_processes(base: Path) -> list[int]:
    return processes_with_env("GEMINI_CLI_HOME", str(base / "home"))


class CliWorld(EmulatorAdapter):
    """The real Gemini CLI 0.61.0, one process per run (backends/gemini_cli/backend.py)."""

    def upstream_processes(self) -> list[int]:
        return home_processes(self.base)

    @asynccontextmanager
    async def _cold(self) -> AsyncIterator[Backend]:
        async with self._emulator() as api:
            try:
                yield GeminiCliBackend(Settings.from_env(cli_env(self.base, self.project, api.base_url)))
            finally:
                left = await wait_until_gone(self.upstream_processes)
                assert left == [], f"{self.name}: processes left: {left}"

    def running(self) -> AbstractAsyncContextManager[Backend]:
        return self._cold()


@dataclass
class SharedWarm:
    """One emulator, one CLI home and one warm pool (one warm CLI) for every acp test of a module: each test's runs
    have sessions of their own, in a project of its own."""

    base: Path
    api: FakeGeminiApi
    pool: WarmPool


@asynccontextmanager
async def shared_warm(base: Path) -> AsyncIterator[SharedWarm]:
    """The module's SharedWarm; on exit no process of its home is left."""
    with FakeGeminiApi() as api:
        try:
            async with WarmPool(grace=2.0) as pool:
                yield SharedWarm(base, api, pool)
        finally:
            left = await wait_until_gone(lambda: home_processes(base))
            assert left == [], f"acp: processes left: {left}"


class AcpWorld(CliWorld):
    """The real Gemini CLI 0.61.0 warm over ACP (backends/gemini_cli/acp/), on the module's shared pool."""

    shared: SharedWarm | None = None

    @asynccontextmanager
    async def _warm(self) -> AsyncIterator[Backend]:
        shared = self.shared
        assert shared is not None, "make_adapter('acp', ...) needs the module's SharedWarm"
        self.api = shared.api
        try:
            yield AcpBackend(Settings.from_env(cli_env(shared.base, self.project, shared.api.base_url)), shared.pool)
        finally:
            self.api = None

    def running(self) -> AbstractAsyncContextManager[Backend]:
        return self._warm()

    def upstream_processes(self) -> list[int]:
        return []  # the pool's process serves the module's next test; shared_warm checks none outlives the pool

    def run_processes(self) -> list[int]:
        return []

    async def assert_stopped(self, backend: Backend) -> None:
        # The warm process outlives a run by design (it serves the next one): the closed turn must have been
        # cancelled, so the same pool answers the next prompt at once; the process itself ends with the pool.
        prompt, expected = self.answer("after the cancel")
        with anyio.fail_after(STOP_BOUND * 2):
            async with aclosing(open_run(backend, self.spec(prompt))) as events:
                text = "".join([e.text async for e in events if isinstance(e, TextDelta)])
        assert text == expected

    async def warm_up(self, backend: Backend) -> None:
        prompt, expected = self.answer("warm up")
        with anyio.fail_after(STOP_BOUND * 6):  # the pool boots its process: Node, on a machine maybe loaded
            async with aclosing(open_run(backend, self.spec(prompt))) as events:
                assert "".join([e.text async for e in events if isinstance(e, TextDelta)]) == expected


class ApiWorld(EmulatorAdapter):
    """The Gemini REST API through google-genai (backends/api/), in this process."""

    def upstream_processes(self) -> list[int]:
        return []  # in-process: closing the generator closes its HTTP stream

    @asynccontextmanager
    async def _api(self) -> AsyncIterator[Backend]:
        async with self._emulator() as api:
            env = {
                "HOME": str(self.base / "home"),
                "LANG": "C.UTF-8",
                "GEMINI_RELAY_PROJECT_ROOT": str(self.project),
                "GEMINI_RELAY_STATE_DIR": str(self.base / "state"),
                "GEMINI_API_KEY": "test-key-abcd1234wxyz",
                "GOOGLE_GEMINI_BASE_URL": api.base_url,
                "GEMINI_DEFAULT_MODEL": TEST_MODEL,
            }
            yield ApiBackend(Settings.from_env(env))

    def running(self) -> AbstractAsyncContextManager[Backend]:
        return self._api()


class AgyAdapter(Adapter):
    """The fake agy (tests/fakes/fake_agy.py), one process per run (backends/agy/backend.py)."""

    def expected_answer(self, text: str) -> str:
        return f"Hello from fake agy! You said: {self.prompt(Behaviour.ANSWER, text)}"

    def turns_seen(self, events: list[AgentEvent]) -> int:
        last = events[-1]
        assert isinstance(last, Finished) and last.num_turns is not None, last
        return last.num_turns

    def _world(self) -> AgyWorld:
        home, bin_dir = self.base / "home", self.base / "bin"
        home.mkdir(exist_ok=True)
        bin_dir.mkdir(exist_ok=True)
        world = AgyWorld(self.base, home, self.project, bin_dir, self.base / "fake-agy.log")
        world.install()
        return world

    def upstream_processes(self) -> list[int]:
        return processes_with_env("HOME", str(self.base / "home"))

    @asynccontextmanager
    async def _agy(self) -> AsyncIterator[Backend]:
        world = self._world()
        try:
            yield AgyBackend(world.settings())
        finally:
            left = await wait_until_gone(self.upstream_processes)
            assert left == [], f"{self.name}: processes left: {left}"

    def running(self) -> AbstractAsyncContextManager[Backend]:
        return self._agy()


def _agy_big(kb: int) -> str:
    """The fake agy's `big:<kb>` answer (tests/fakes/fake_agy.py: Run.answer)."""
    line = "line {:06d} the quick brown fox jumps over the lazy dog\n"
    count = kb * 1024 // len(line.format(0)) + 1
    return "".join(line.format(i) for i in range(count))


EMULATOR_UNHONOURED: tuple[dict[str, Any], str] = ({"agent": "reviewer", "explicit": frozenset({"agent"})}, "agent")


def make_adapter(name: str, base: Path, shared: SharedWarm | None = None) -> Adapter:
    emulator = {
        "prompts": _emulator_prompts(),
        "unicode_text": fake_gemini_api.UNICODE_TEXT,
        "chunked_text": "".join(fake_gemini_api.SLOW_CHUNKS),
        "stall_text": fake_gemini_api.STALL_TEXT,
        "unhonoured": EMULATOR_UNHONOURED,
    }
    if name == "gemini-cli":
        return CliWorld(name, base, enforces_deadline=False, **emulator)  # type: ignore[arg-type]
    if name == "acp":
        acp = AcpWorld(name, base, enforces_deadline=True, **emulator)  # type: ignore[arg-type]
        acp.shared = shared
        return acp
    if name == "api":
        return ApiWorld(name, base, enforces_deadline=True, **emulator)  # type: ignore[arg-type]
    if name == "agy":
        assert FAKE_AGY.exists()
        return AgyAdapter(
            name,
            base,
            enforces_deadline=False,
            prompts={
                Behaviour.ANSWER: "{text}",
                Behaviour.UNICODE: "[[agy:unicode]]",
                Behaviour.CHUNKED: "[[agy:big:12]]",
                Behaviour.QUOTA: "[[agy:quota]]",
                Behaviour.SERVER_ERROR: "[[agy:error_result]]",
                Behaviour.STALL: "[[agy:hang]]",
                Behaviour.EMPTY: "[[agy:empty]]",
                Behaviour.HISTORY: "count the turns",
                Behaviour.UNHONOURED: "{text}",
            },
            unicode_text=fake_agy.UNICODE_TEXT,
            chunked_text=_agy_big(12),
            stall_text="Thinking about it",
            # agy has --sandbox but cannot isolate its tools: it always says so.
            unhonoured=({"sandbox": True}, "sandbox"),
        )
    raise ValueError(name)


BACKENDS = ("agy", "gemini-cli", "api", "acp")
# Behaviours a backend's upstream cannot produce, with the reason: those combinations are skipped, never dropped.
UNSUPPORTED: dict[str, dict[Behaviour, str]] = {name: {} for name in BACKENDS}
