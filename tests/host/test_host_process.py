"""The host process itself: its socket and lock, who may talk to it, the protocol version, idle exit."""

from __future__ import annotations

import functools
import json
import os
import signal
import socket
import stat
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest

from gemini_relay import __version__
from gemini_relay.config import Settings
from gemini_relay.core.spec import RunSpec
from gemini_relay.core.vocabulary import RunState
from gemini_relay.jobs.protocol import PROTOCOL, encode_spec, peer_uid, socket_path
from gemini_relay.jobs.store.job_status import derive_status
from gemini_relay.relay_host import warm_pools as registries_module
from gemini_relay.relay_host.door import take_host_lock
from gemini_relay.relay_host.host import RelayHost
from tests.fakes.fake_gemini_api import echo_text
from tests.harness import API_BACKEND, TEST_MODEL, Relay
from tests.host.conftest import host_connection, host_pids, host_request, host_socket, server_pids
from tests.test_server_surface import text_of

pytestmark = pytest.mark.anyio


def settings_in(tmp_path: Path, **env: str) -> Settings:
    return Settings.from_env({"HOME": str(tmp_path), "GEMINI_RELAY_PROJECT_ROOT": str(tmp_path), "PATH": "/usr/bin",
                              **env})  # fmt: skip


@asynccontextmanager
async def host_in_process(settings: Settings, *, allowed_uid: int | None = None) -> AsyncIterator[RelayHost]:
    lock = take_host_lock(settings.state_dir)
    assert lock is not None
    host = RelayHost(settings, lock, signals=False, allowed_uid=allowed_uid)
    async with anyio.create_task_group() as tg:
        tg.start_soon(host.serve)
        with anyio.fail_after(10):
            await host.listening.wait()
        yield host
        host.drain()


@asynccontextmanager
async def old_host(hosted: Relay) -> AsyncIterator[subprocess.Popen[bytes]]:
    """A relay host of another version (0.0.0-old) serving the world's state dir, killed at the end if still up."""
    code = (
        "import sys, gemini_relay; gemini_relay.__version__ = '0.0.0-old'; "
        "from gemini_relay.cli import main; sys.exit(main(['host']))"
    )
    old = subprocess.Popen([sys.executable, "-c", code], env=hosted.env, cwd=hosted.project,
                           stdin=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)  # fmt: skip
    try:
        with anyio.fail_after(20):
            while not host_socket(hosted).exists():
                await anyio.sleep(0.02)
        yield old
    finally:
        if old.poll() is None:
            old.kill()
            old.wait()


def hello(path: Path) -> bytes:
    with host_connection(path, 5) as sock:
        try:
            sock.sendall(json.dumps({"op": "hello", "protocol": PROTOCOL, "version": __version__}).encode() + b"\n")
            with sock.makefile("rb") as stream:
                return stream.readline()
        except (ConnectionResetError, BrokenPipeError):  # closed with our hello unread (or before it was sent)
            return b""


async def test_the_socket_is_0600_in_a_0700_directory_and_a_second_host_cannot_take_the_lock(tmp_path: Path) -> None:
    settings = settings_in(tmp_path)
    async with host_in_process(settings):
        path = socket_path(settings.state_dir)
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
        assert stat.S_ISSOCK(path.stat().st_mode)
        assert take_host_lock(settings.state_dir) is None
        assert json.loads(await anyio.to_thread.run_sync(hello, path))["ok"] is True


async def test_a_peer_of_another_uid_is_refused_without_an_answer(tmp_path: Path) -> None:
    settings = settings_in(tmp_path)
    async with host_in_process(settings, allowed_uid=os.getuid() + 1):
        assert await anyio.to_thread.run_sync(hello, socket_path(settings.state_dir)) == b""


def test_the_peer_uid_is_read_from_the_kernel() -> None:
    left, right = socket.socketpair(socket.AF_UNIX)
    with left, right:
        assert peer_uid(left) == os.getuid()


async def test_an_idle_host_exits_and_removes_its_socket(tmp_path: Path) -> None:
    settings = settings_in(tmp_path, GEMINI_RELAY_HOST_IDLE="0.3")
    lock = take_host_lock(settings.state_dir)
    assert lock is not None
    with anyio.fail_after(10):
        await RelayHost(settings, lock, signals=False).serve()
    assert not socket_path(settings.state_dir).exists()
    assert take_host_lock(settings.state_dir) is not None  # the lock went with it


async def test_a_host_of_another_version_is_drained_and_replaced(hosted: Relay) -> None:
    hosted.env.update(API_BACKEND)  # the host's life is tested, not the CLI's
    async with old_host(hosted) as old:
        assert host_request(hosted, {"op": "status"}, version="0.0.0-old")[1]["version"] == "0.0.0-old"
        async with hosted.client() as client:
            result = await client.call_tool("gemini-ask", {"prompt": "new host"})
        assert await anyio.to_thread.run_sync(old.wait, 20) == 0
    assert not result.is_error and echo_text("new host") in text_of(result)
    status = host_request(hosted, {"op": "status"})[1]
    assert status["version"] == __version__ and status["pid"] != old.pid
    assert host_pids(hosted) == [status["pid"]]


async def test_idle_exit_applies_to_a_host_started_by_a_server(hosted: Relay) -> None:
    hosted.env.update(API_BACKEND)  # the host's life is tested, not the CLI's
    async with hosted.client(GEMINI_RELAY_HOST_IDLE="0.5") as client:
        result = await client.call_tool("gemini-ask", {"prompt": "then idle"})
    assert not result.is_error
    with anyio.fail_after(20):
        while host_pids(hosted):
            await anyio.sleep(0.05)
    assert not host_socket(hosted).exists()


async def test_a_malformed_request_ends_its_connection_and_not_the_host(tmp_path: Path) -> None:
    settings = settings_in(tmp_path)
    path = socket_path(settings.state_dir)

    def malformed() -> bytes:
        with host_connection(path, 5) as sock:
            greeting = {"op": "hello", "protocol": PROTOCOL, "version": __version__}
            sock.sendall(json.dumps(greeting).encode() + b"\n" + b'{"op": "run"}\n')
            with sock.makefile("rb") as stream:
                stream.readline()  # the hello reply
                return stream.readline()

    async with host_in_process(settings):
        assert await anyio.to_thread.run_sync(malformed) == b""
        assert json.loads(await anyio.to_thread.run_sync(hello, path))["ok"] is True


async def test_a_server_whose_kept_connection_the_idle_host_closed_starts_a_new_host(hosted: Relay) -> None:
    hosted.env.update(API_BACKEND)  # the host's life is tested, not the CLI's
    async with hosted.client(GEMINI_RELAY_HOST_IDLE="0.5") as client:
        first = await client.call_tool("gemini-ask", {"prompt": "before idle"})
        old = host_pids(hosted)
        with anyio.fail_after(20):
            while host_pids(hosted):  # the kept connection is not work: the host idles out under a live server
                await anyio.sleep(0.05)
        second = await client.call_tool("gemini-ask", {"prompt": "after idle"})
        new = host_pids(hosted)
    assert echo_text("before idle") in text_of(first) and echo_text("after idle") in text_of(second)
    assert old and new and new != old


async def test_a_starting_host_moves_a_big_log_aside(hosted: Relay) -> None:
    hosted.env.update(API_BACKEND)  # the host's life is tested, not the CLI's
    log = hosted.home / ".local" / "state" / "gemini-relay" / "host" / "host.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_bytes(b"old line\n" * 600_000)  # past 5 MB
    async with hosted.client() as client:
        await client.call_tool("gemini-ping", {})
        await client.call_tool("gemini-ask", {"prompt": "starts the host"})
    assert log.with_name("host.log.1").stat().st_size == 9 * 600_000
    assert b"old line" not in log.read_bytes() and log.stat().st_size < 1_000_000


async def test_a_draining_host_cancels_only_the_job_a_newer_server_cancels(hosted: Relay) -> None:
    """An upgrade: the old host drains with two runs; a new server's gemini-cancel of one must not stop the other
    (it used to SIGTERM the whole old host, which cancelled every run in it)."""
    hosted.env.update(API_BACKEND)  # the runs are coroutines of the old host: what its cancel ends is seen directly
    async with old_host(hosted) as old:
        jobs = []
        for name in ("a", "b"):
            spec = RunSpec(tool="gemini-run", prompt=f"[[fake:stall]] {name}", cwd=hosted.project, model=TEST_MODEL)
            create = {"op": "create", "run_id": f"drain-{name}", "spec": encode_spec(spec), "backend": "api",
                      "options": {}, "env": hosted.env}  # fmt: skip
            jobs.append(host_request(hosted, create, version="0.0.0-old")[1]["job_id"])
        await anyio.to_thread.run_sync(hosted.api.wait_for_requests, 2)
        async with hosted.client() as client:
            cancelled = await client.call_tool("gemini-cancel", {"jobId": jobs[0]})
            other = (await client.call_tool("gemini-status", {"jobId": jobs[1]})).structured_content or {}
            second = await client.call_tool("gemini-cancel", {"jobId": jobs[1]})
        assert await anyio.to_thread.run_sync(old.wait, 20) == 0  # it drained: its last run ended, it exits
    assert text_of(cancelled).startswith(f"Cancelled job {jobs[0]} (cancelled"), text_of(cancelled)
    assert other["state"] == "running", other
    assert text_of(second).startswith(f"Cancelled job {jobs[1]} (cancelled"), text_of(second)


async def test_a_warm_pool_with_a_running_prompt_is_not_closed_when_its_registry_is_evicted(
    relay: Relay, monkeypatch: pytest.MonkeyPatch
) -> None:
    """More distinct server environments than the host keeps registries for: the oldest one is evicted, but its warm
    CLI serves a prompt, which must run on (it used to be killed under the prompt) until it ends."""
    monkeypatch.setattr(registries_module, "REGISTRIES", 2)
    env = {**relay.env, "GEMINI_RELAY_WARM": "on", "GEMINI_RELAY_STATE_DIR": str(relay.base / "state")}
    settings = Settings.from_env(env, cwd=relay.project)
    async with host_in_process(settings) as host:
        spec = RunSpec(tool="gemini-run", prompt="[[fake:stall]] evict", cwd=relay.project, model=TEST_MODEL)
        create = {"op": "create", "run_id": "evict-1", "spec": encode_spec(spec), "backend": "gemini", "options": {},
                  "env": env}  # fmt: skip
        request = functools.partial(host_request_at, socket_path(settings.state_dir))
        job = str((await anyio.to_thread.run_sync(request, create))["job_id"])
        await anyio.to_thread.run_sync(relay.api.wait_for_requests, 1)
        for other in range(3):  # three more environments (cold: no CLI to boot) push the first one out
            prewarm = {"op": "prewarm", "env": {**env, "GEMINI_RELAY_WARM": "off", "GEMINI_DEFAULT_MODEL": f"m{other}"},
                       "cwd": str(relay.project)}  # fmt: skip
            await anyio.to_thread.run_sync(request, prewarm)
        await anyio.sleep(0.5)  # what would close the pool runs at once; give a wrongly closed CLI time to die
        assert derive_status(host.store, job).state is RunState.RUNNING
        await anyio.to_thread.run_sync(request, {"op": "cancel", "job_id": job})
        final = derive_status(host.store, job)
    assert final.state is RunState.CANCELLED, final


def host_request_at(path: Path, message: dict[str, object]) -> dict[str, object]:
    with host_connection(path, 30) as sock, sock.makefile("rwb") as stream:
        for line in ({"op": "hello", "protocol": PROTOCOL, "version": __version__}, message):
            stream.write(json.dumps(line).encode() + b"\n")
            stream.flush()
            reply: dict[str, object] = json.loads(stream.readline())
        return reply


def _tree_of(root: int) -> set[int]:
    """`root`'s descendants, found as tree-kill finds them: by parent pid."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rpartition(")")[2].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    found: set[int] = set()
    todo = list(children.get(root, []))
    while todo:
        pid = todo.pop()
        found.add(pid)
        todo.extend(children.get(pid, []))
    return found


async def test_a_client_that_kills_its_server_with_the_servers_process_tree_leaves_the_host_and_its_runs_alone(
    hosted: Relay,
) -> None:
    hosted.env.update(API_BACKEND)  # the host's place in the process tree is tested, not the CLI's
    async with hosted.client() as client:
        result = await client.call_tool("gemini-ask", {"prompt": "the host is up"})
        host = host_request(hosted, {"op": "status"})[1]["pid"]
        (server,) = server_pids(hosted)
        tree = _tree_of(server)
        for pid in tree:  # what a tree-kill of the server would stop with it
            os.kill(pid, signal.SIGKILL)
        alive = host_request(hosted, {"op": "status"})[1]["pid"]
    assert not result.is_error
    assert host not in tree  # started detached: not the server's child, so not in its tree
    assert alive == host  # the host (and every client's jobs in it) went on
