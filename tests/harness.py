"""End-to-end harness: the server as a real subprocess over stdio, the real Gemini CLI, the project's fake API.

Every test gets its own temporary home, project root and emulator, and is checked for leftover processes.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import shutil
import signal
import socket
import sys
import time
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.session import ElicitationFnT, MessageHandlerFnT
from mcp.client.stdio import stdio_client

from tests.fakes.fake_gemini_api import FakeGeminiApi, LoggedRequest
from tests.fakes.gemini_home import REPO_GEMINI_CLI, isolated_cli_env
from tests.procs import processes_with_env

REPO = Path(__file__).resolve().parents[1]
TEST_MODEL = "gemini-2.5-pro"  # an explicit -m skips the CLI's router call: one API request per prompt
LEFTOVER_TIMEOUT = 30.0  # a bound: a loaded machine reaps late


def gemini_binary() -> Path:
    """The pinned real Gemini CLI the test setup installs; its absence is a setup error, not a skip."""
    path = Path(os.environ.get("GEMINI_RELAY_TEST_GEMINI", str(REPO_GEMINI_CLI)))
    if not path.exists():
        pytest.fail(f"the Gemini CLI 0.61.0 is not installed at {path}; run scripts/test (it installs it)")
    return path


@dataclass
class Relay:
    """One isolated world: a project dir, a CLI home, an emulator, and the env a server starts with."""

    base: Path
    project: Path
    home: Path
    api: FakeGeminiApi
    env: dict[str, str]
    stderr_path: Path

    def client(
        self, message_handler: MessageHandlerFnT | None = None, /, **overrides: str | None
    ) -> AbstractAsyncContextManager[Client]:
        return self.asking_client(None, message_handler, **overrides)

    @asynccontextmanager
    async def asking_client(
        self,
        elicitation: ElicitationFnT | None,
        message_handler: MessageHandlerFnT | None = None,
        /,
        **overrides: str | None,
    ) -> AsyncIterator[Client]:
        """`elicitation`: the client declares elicitation and answers with this callback."""
        env = dict(self.env)
        for key, value in overrides.items():
            if value is None:
                env.pop(key, None)
            else:
                env[key] = value
        params = StdioServerParameters(
            command=sys.executable, args=["-m", "gemini_relay"], env=env, cwd=str(self.project)
        )
        with self.stderr_path.open("a", encoding="utf-8") as errlog:
            transport = stdio_client(params, errlog=errlog)
            client_of = Client(
                transport, mode="legacy", message_handler=message_handler, elicitation_callback=elicitation
            )
            async with client_of as client:
                yield client

    def stderr(self) -> str:
        return self.stderr_path.read_text(encoding="utf-8", errors="replace")

    def logs(self) -> str:
        """Everything the relay logged: the server's stderr plus every job supervisor's log."""
        jobs = self.home / ".local" / "state" / "gemini-relay" / "jobs"
        parts = [self.stderr()]
        parts += [p.read_text(encoding="utf-8", errors="replace") for p in sorted(jobs.glob("*/supervisor.log"))]
        host_log = jobs.parent / "host" / "host.log"  # runs in the relay host log there
        if host_log.exists():
            parts.append(host_log.read_text(encoding="utf-8", errors="replace"))
        return "\n".join(parts)

    def main_requests(self) -> list[LoggedRequest]:
        """The agent-turn requests the CLI sent (router and title calls excluded)."""
        return [r for r in self.api.requests if r.kind == "main"]

    def turn_requests(self) -> list[LoggedRequest]:
        """The answer requests of either upstream: the CLI's agent turns and the api backend's plain calls."""
        return [r for r in self.api.requests if r.kind in ("main", "plain")]


def cli_processes(home: Path) -> list[int]:
    """Live CLI children of this test's server (only children get NO_COLOR=1 from the relay)."""
    return [pid for pid in processes_using(home) if b"NO_COLOR=1" in _environ(pid).split(b"\0")]


def _environ(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return b""


def processes_using(home: Path) -> list[int]:
    """Live (non-zombie) processes whose environment points at this test's CLI home."""
    return processes_with_env("GEMINI_CLI_HOME", str(home))


async def wait_no_cli_processes(home: Path, timeout: float = LEFTOVER_TIMEOUT) -> None:
    """Wait (bounded) until no CLI child of this test is alive, while the server may still run."""
    with anyio.move_on_after(timeout):
        while cli_processes(home):
            await anyio.sleep(0.05)
    assert cli_processes(home) == [], "CLI processes left running"


def assert_no_processes(home: Path, timeout: float = LEFTOVER_TIMEOUT) -> None:
    deadline = time.monotonic() + timeout
    while processes_using(home) and time.monotonic() < deadline:
        time.sleep(0.05)  # teardown is synchronous; this polls /proc, it does not wait for an event
    _fail_if_left(home)


def _fail_if_left(home: Path) -> None:
    left = processes_using(home)
    if left:
        names = [Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")[:120] for pid in left]
        pytest.fail(f"processes left running: {names}")


@pytest.fixture
def relay(tmp_path: Path) -> Iterator[Relay]:
    with relay_world(tmp_path) as world:
        yield world


@contextlib.contextmanager
def relay_world(tmp_path: Path) -> Iterator[Relay]:
    """One world under `tmp_path`, checked at its end for leftover processes: a test's (`relay`) or a module's, for
    cases whose worlds would be identical and so may share one server (each keeps its own conversations and files)."""
    project = tmp_path / "proj"
    project.mkdir()
    with FakeGeminiApi() as api:
        cli_env = isolated_cli_env(tmp_path, api.base_url)
        env = {
            "PATH": cli_env["PATH"],
            "LANG": "C.UTF-8",
            **cli_env,
            "GEMINI_CLI_PATH": str(gemini_binary()),
            "GEMINI_RELAY_PROJECT_ROOT": str(project),
            "GEMINI_MCP_BACKEND": "gemini",
            "GEMINI_DEFAULT_MODEL": TEST_MODEL,
            "GEMINI_RELAY_KILL_GRACE": "2",
            # Warm is the product's default; this world checks the cold CLI contract, and tests of the warm path
            # (test_server_warm, the parity matrix) turn it on. A warm CLI in every world would cost ~250 MB each.
            "GEMINI_RELAY_WARM": "off",
        }
        world = Relay(tmp_path, project, Path(cli_env["GEMINI_CLI_HOME"]), api, env, tmp_path / "server-stderr.log")
        yield world
        stop_host(world.home / ".local" / "state" / "gemini-relay")
        stop_hosts_of(world.home)
        assert_no_processes(world.home)


def module_event_loop() -> Any:
    """A module's `anyio_backend` of module scope (`anyio_backend = module_event_loop()`): one event loop for its
    tests, so a client a module's fixture opened serves them all."""

    @pytest.fixture(scope="module", name="anyio_backend")
    def backend() -> str:
        return "asyncio"

    return backend


def shared_server(name: str, env: Mapping[str, str | None] | None = None, *, fake_agy: bool = False) -> tuple[Any, Any]:
    """Fixtures `<name>_world` and `<name>_client`: one world and one server (started with `env`) for the cases of a
    module whose worlds would be identical. Each case keeps its own prompts, conversations and files, and starts
    with `fresh_case`; a case that changes the env, kills a server or counts processes keeps a world of its own."""

    @pytest.fixture(scope="module", name=f"{name}_world")
    def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Relay]:
        with relay_world(tmp_path_factory.mktemp(name)) as made:
            yield served_by_fake_agy(made) if fake_agy else made

    @pytest.fixture(scope="module", name=f"{name}_client")
    async def client(request: pytest.FixtureRequest) -> AsyncIterator[Client]:
        shared: Relay = request.getfixturevalue(f"{name}_world")
        async with shared.client(**(env or {})) as opened:
            yield opened

    return world, client


def fresh_case(world: Relay) -> Relay:
    """A case on a shared world starts with the emulator's log empty and no sticky scenario."""
    world.api.clear_requests()
    world.api.set_scenario(None)
    return world


def stop_hosts_of(home: Path) -> None:
    """SIGTERM the relay hosts of this world left in other state dirs (a test's GEMINI_RELAY_STATE_DIR): each
    cancels its runs and exits."""
    for pid in processes_using(home):
        with contextlib.suppress(OSError):
            if is_host_cmdline(Path(f"/proc/{pid}/cmdline").read_bytes()):
                os.kill(pid, signal.SIGTERM)


def is_host_cmdline(cmdline: bytes) -> bool:
    """A relay host's /proc cmdline (of any version, started detached by a server or directly)."""
    from gemini_relay.relay_host.handover import is_host_argv

    return is_host_argv(cmdline.split(b"\0"))


def host_serving(state_dir: Path | str) -> int | None:
    """The relay host serving `state_dir` (its command line is a host's, its environment names the state dir)."""
    needle = f"GEMINI_RELAY_STATE_DIR={state_dir}".encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if not is_host_cmdline((entry / "cmdline").read_bytes()):
                continue
            if needle in (entry / "environ").read_bytes().split(b"\0"):
                return int(entry.name)
        except OSError:
            continue
    return None


def stop_host(state_dir: Path) -> None:
    """Shut down the world's relay host, if one runs (it would otherwise idle on for GEMINI_RELAY_HOST_IDLE)."""
    from gemini_relay import __version__
    from gemini_relay.jobs.protocol import PROTOCOL, socket_address, socket_path

    path = socket_path(state_dir)
    if not path.exists():
        return
    with contextlib.suppress(OSError), socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(10)
        with socket_address(path) as address:
            sock.connect(address)
        hello = {"op": "hello", "protocol": PROTOCOL, "version": __version__}
        sock.sendall(json.dumps(hello).encode() + b"\n" + json.dumps({"op": "shutdown"}).encode() + b"\n")
        with sock.makefile("rb") as replies:
            replies.readline()
            replies.readline()


def write_wrapper(path: Path, target: Path, env_dump: Path) -> Path:
    """An executable standing in for `gemini` that records its environment, then execs the real CLI."""
    path.write_text(f'#!/bin/sh\nenv > "{env_dump}"\nexec "{target}" "$@"\n', encoding="utf-8")
    path.chmod(0o755)
    return path


def node_available() -> bool:
    return shutil.which("node") is not None


FAKE_AGY = REPO / "tests" / "fakes" / "fake_agy.py"


def install_fake_agy(bin_dir: Path, log: Path, **knobs: str) -> Path:
    """An `agy` on disk that runs the fake with FAKE_AGY_<KNOB> settings (the child env is an allowlist)."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    agy = bin_dir / "agy"
    exports = "".join(f"export FAKE_AGY_{k.upper()}={shlex.quote(v)}\n" for k, v in knobs.items())
    agy.write_text(
        f"#!/bin/sh\nexport FAKE_AGY_LOG={shlex.quote(str(log))}\n{exports}"
        f'exec {shlex.quote(sys.executable)} {shlex.quote(str(FAKE_AGY))} "$@"\n',
        encoding="utf-8",
    )
    agy.chmod(0o755)
    return agy


# The api backend (google-genai against the same emulator) runs inside the relay host or server: no CLI boots. For
# end-to-end tests of processes (servers, hosts, jobs outliving them) where the Gemini CLI is not what is tested.
API_BACKEND = {"GEMINI_MCP_BACKEND": "api"}


@pytest.fixture
def agy_relay(relay: Relay) -> Relay:
    """The same world, served by the agy backend through the project's fake agy."""
    return served_by_fake_agy(relay)


def served_by_fake_agy(relay: Relay) -> Relay:
    agy = install_fake_agy(relay.base / "bin", relay.base / "fake-agy.log")
    relay.env.update({"GEMINI_MCP_BACKEND": "agy", "AGY_CLI_PATH": str(agy)})
    return relay


def agy_log(relay: Relay) -> list[dict[str, object]]:
    """The fake agy's log of this world: one entry per start (its argv, pid, process group), stdin read, grandchild."""
    path = relay.base / "fake-agy.log"
    if not path.exists():
        return []
    lines = path.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.endswith("}")]  # a line being written is skipped


def agy_runs(relay: Relay) -> int:
    """How many runs (`-p`) the fake agy of this world has started, not counting its probes."""
    return len([e for e in agy_log(relay) if e.get("event") == "start" and "-p" in str(e["argv"])])


async def wait_agy_runs(relay: Relay, count: int = 1, timeout: float = LEFTOVER_TIMEOUT) -> None:
    """Wait (bounded) until the fake agy has started `count` runs (`-p`), not counting its probes."""
    with anyio.fail_after(timeout):
        while agy_runs(relay) < count:
            await anyio.sleep(0.02)


CHUNK_FOOTER = re.compile(r"\n\n---\nResponse chunk (\d+)/(\d+)\nCache key: ([0-9a-f]{8})\n")


async def chunk_bodies(client: Client, first_text: str) -> list[str]:
    """Every chunk of a reply without its footer, the rest fetched with gemini-fetch-chunk (an unchunked reply is
    one body). The bodies concatenate to the whole reply."""
    footer = CHUNK_FOOTER.search(first_text)
    if footer is None:
        return [first_text]
    total, key = int(footer.group(2)), footer.group(3)
    bodies = [first_text[: footer.start()]]
    for index in range(2, total + 1):
        result = await client.call_tool("gemini-fetch-chunk", {"cacheKey": key, "chunkIndex": index})
        block = result.content[0]
        assert isinstance(block, types.TextContent) and not result.is_error, block
        found = CHUNK_FOOTER.search(block.text)
        assert found is not None and int(found.group(1)) == index, block.text[-300:]
        bodies.append(block.text[: found.start()])
    return bodies
