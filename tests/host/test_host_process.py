"""The host process itself: its socket and lock, who may talk to it, the protocol version, idle exit."""

from __future__ import annotations

import json
import os
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
from gemini_relay.jobs.host import Host, peer_uid, take_host_lock
from gemini_relay.jobs.host_protocol import PROTOCOL, socket_address, socket_path
from tests.fakes.fake_gemini_api import echo_text
from tests.harness import Relay
from tests.host.conftest import host_pids, host_request, host_socket
from tests.test_server_surface import text_of

pytestmark = pytest.mark.anyio


def settings_in(tmp_path: Path, **env: str) -> Settings:
    return Settings.from_env({"HOME": str(tmp_path), "GEMINI_RELAY_PROJECT_ROOT": str(tmp_path), "PATH": "/usr/bin",
                              **env})  # fmt: skip


@asynccontextmanager
async def host_in_process(settings: Settings, **kwargs: int) -> AsyncIterator[Host]:
    lock = take_host_lock(settings.state_dir)
    assert lock is not None
    host = Host(settings, lock, signals=False, **kwargs)
    async with anyio.create_task_group() as tg:
        tg.start_soon(host.serve)
        path = socket_path(settings.state_dir)
        with anyio.fail_after(10):
            while not path.exists():
                await anyio.sleep(0.01)
        yield host
        host.drain()


def hello(path: Path) -> bytes:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(5)
        with socket_address(path) as address:
            sock.connect(address)
        try:
            sock.sendall(json.dumps({"op": "hello", "protocol": PROTOCOL, "version": __version__}).encode() + b"\n")
            with sock.makefile("rb") as stream:
                return stream.readline()
        except ConnectionResetError:  # closed with our hello unread
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
        await Host(settings, lock, signals=False).serve()
    assert not socket_path(settings.state_dir).exists()
    assert take_host_lock(settings.state_dir) is not None  # the lock went with it


async def test_a_host_of_another_version_is_drained_and_replaced(hosted: Relay) -> None:
    old_code = (
        "import sys, gemini_relay; gemini_relay.__version__ = '0.0.0-old'; "
        "from gemini_relay.cli import main; sys.exit(main(['host']))"
    )
    old = subprocess.Popen([sys.executable, "-c", old_code], env=hosted.env, cwd=hosted.project,
                           stdin=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)  # fmt: skip
    try:
        with anyio.fail_after(20):
            while not host_socket(hosted).exists():
                await anyio.sleep(0.02)
        assert host_request(hosted, {"op": "status"}, version="0.0.0-old")[1]["version"] == "0.0.0-old"
        async with hosted.client() as client:
            result = await client.call_tool("gemini-ask", {"prompt": "new host"})
        assert await anyio.to_thread.run_sync(old.wait, 20) == 0
    finally:
        if old.poll() is None:
            old.kill()
            old.wait()
    assert not result.is_error and echo_text("new host") in text_of(result)
    status = host_request(hosted, {"op": "status"})[1]
    assert status["version"] == __version__ and status["pid"] != old.pid
    assert host_pids(hosted) == [status["pid"]]


async def test_idle_exit_applies_to_a_host_started_by_a_server(hosted: Relay) -> None:
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
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(5)
            with socket_address(path) as address:
                sock.connect(address)
            greeting = {"op": "hello", "protocol": PROTOCOL, "version": __version__}
            sock.sendall(json.dumps(greeting).encode() + b"\n" + b'{"op": "run"}\n')
            with sock.makefile("rb") as stream:
                stream.readline()  # the hello reply
                return stream.readline()

    async with host_in_process(settings):
        assert await anyio.to_thread.run_sync(malformed) == b""
        assert json.loads(await anyio.to_thread.run_sync(hello, path))["ok"] is True


async def test_a_server_whose_kept_connection_the_idle_host_closed_starts_a_new_host(hosted: Relay) -> None:
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
    log = hosted.home / ".local" / "state" / "gemini-relay" / "host" / "host.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_bytes(b"old line\n" * 600_000)  # past 5 MB
    async with hosted.client() as client:
        await client.call_tool("gemini-ping", {})
        await client.call_tool("gemini-ask", {"prompt": "starts the host"})
    assert log.with_name("host.log.1").stat().st_size == 9 * 600_000
    assert b"old line" not in log.read_bytes() and log.stat().st_size < 1_000_000
