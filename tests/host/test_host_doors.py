"""The host socket as a door: whoever answers there, and whatever is found at its path, is checked before a server
sends anything; the host bounds what one client can make it hold, and its accept loop outlives running out of
descriptors."""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import pytest

from bench.reliability.host_door import IMPOSTOR
from gemini_relay.config import Settings
from gemini_relay.errors import BackendUnavailable
from gemini_relay.jobs.host_connection import HostConnection
from gemini_relay.jobs.protocol import MAX_REQUEST_LINE, socket_address, socket_path
from gemini_relay.relay_host import host as host_module
from tests.host.conftest import host_connection
from tests.host.test_host_process import hello, host_in_process, settings_in

pytestmark = pytest.mark.anyio
NOBODY = 65534
as_root = pytest.mark.skipif(os.getuid() != 0, reason="needs root to run a process as another uid")

FAKE_HOST = IMPOSTOR  # the reliability runner's impostor: one script for both


@contextmanager
def fake_host_of_nobody(state: Path, log: Path) -> Iterator[None]:
    """A host impostor running as uid 65534 on the state dir's socket, writing whatever it receives to `log`."""
    fake = subprocess.Popen([sys.executable, "-c", FAKE_HOST, str(socket_path(state)), str(log)],
                            stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, start_new_session=True)  # fmt: skip
    try:
        assert fake.stdout is not None and fake.stdout.readline().strip() == b"ready"
        yield
    finally:
        fake.kill()
        fake.wait()
        if fake.stdout is not None:
            fake.stdout.close()


@pytest.fixture
def open_dir() -> Iterator[Path]:
    """A directory another uid can reach (pytest's own tmp dirs are 0700 all the way down)."""
    base = Path(tempfile.mkdtemp(prefix="relay-door-", dir="/tmp"))
    base.chmod(0o755)
    try:
        yield base
    finally:
        shutil.rmtree(base, ignore_errors=True)


@as_root
def test_a_host_of_another_user_in_a_state_dir_it_made_first_receives_nothing(open_dir: Path) -> None:
    tmp_path = open_dir
    """Another user created the state dir first and answers on its socket: the server refuses before sending a byte
    (its create would carry the whole environment, GEMINI_API_KEY included)."""
    state = tmp_path / "state"
    (state / "host").mkdir(parents=True)
    for path in (state, state / "host"):
        os.chown(path, NOBODY, NOBODY)
    log = tmp_path / "received"
    log.touch()
    os.chown(log, NOBODY, NOBODY)
    with fake_host_of_nobody(state, log):
        settings = settings_in(tmp_path, GEMINI_RELAY_STATE_DIR=str(state), GEMINI_API_KEY="secret-key")
        client = HostConnection(settings)
        with pytest.raises(BackendUnavailable, match="not a private directory of this user"):
            client.request({"op": "create", "env": dict(settings.env)}, start=False)
    assert log.read_bytes() == b""


@as_root
def test_a_host_socket_served_by_another_uid_in_our_own_dir_receives_nothing(open_dir: Path) -> None:
    tmp_path = open_dir
    state = tmp_path / "state"
    host = state / "host"
    host.mkdir(parents=True, mode=0o700)
    state.chmod(0o711)  # ours, writable by no one else: the other user may only pass through
    host.chmod(0o777)  # only so that the other user can bind there; the server sees the socket's real owner
    log = tmp_path / "received"
    log.touch()
    log.chmod(0o666)
    with fake_host_of_nobody(state, log):
        host.chmod(0o700)
        settings = settings_in(tmp_path, GEMINI_RELAY_STATE_DIR=str(state), GEMINI_API_KEY="secret-key")
        with pytest.raises(BackendUnavailable, match="served by uid 65534"):
            HostConnection(settings).request({"op": "create", "env": dict(settings.env)}, start=False)
    assert log.read_bytes() == b""


async def test_a_directory_at_the_socket_path_is_moved_aside_and_the_host_serves(tmp_path: Path) -> None:
    settings = settings_in(tmp_path)
    path = socket_path(settings.state_dir)
    path.mkdir(parents=True)  # it used to crash the host at start; every call then failed after 15 s
    async with host_in_process(settings):
        assert json.loads(await anyio.to_thread.run_sync(hello, path))["ok"] is True
    assert [p.name for p in path.parent.glob("host.sock.not-a-socket.*")]


async def test_a_request_line_past_the_cap_ends_its_connection_and_the_host_keeps_serving(tmp_path: Path) -> None:
    settings = settings_in(tmp_path)
    path = socket_path(settings.state_dir)

    def flood() -> bytes:
        with host_connection(path, 20) as sock:
            sock.sendall(b'{"op": "hello", "protocol": 2, "version": "x"}\n')
            sock.recv(4096)
            chunk = b"x" * (1024 * 1024)
            try:
                for _ in range(MAX_REQUEST_LINE // len(chunk) + 4):  # an unfinished line past the cap
                    sock.sendall(chunk)
                return sock.recv(4096)
            except TimeoutError:
                return b"still buffering"  # the host kept reading the unfinished line
            except OSError:
                return b""  # cut off: the host did not buffer it

    async with host_in_process(settings) as host:
        assert await anyio.to_thread.run_sync(flood) == b""
        assert json.loads(await anyio.to_thread.run_sync(hello, path))["ok"] is True
        assert host.busy is False


async def test_the_accept_loop_outlives_running_out_of_descriptors_and_caps_its_connections(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A client holding hundreds of connections: past the cap they are closed at once, and with no descriptor left
    the accept loop waits and goes on (it used to end, and with it every later call)."""
    monkeypatch.setattr(host_module, "MAX_CONNECTIONS", 20)
    settings: Settings = settings_in(tmp_path)
    path = socket_path(settings.state_dir)
    holder = (
        "import socket, sys, time\n"
        "held = []\n"
        "for _ in range(300):\n"
        "    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n"
        "    try:\n"
        "        s.connect(sys.argv[1]); held.append(s)\n"
        "    except OSError:\n"
        "        s.close()\n"
        "print(len(held), flush=True)\n"
        "sys.stdin.read()\n"
    )
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    async with host_in_process(settings):
        with socket_address(path) as address:
            flooder = subprocess.Popen([sys.executable, "-c", holder, address], stdin=subprocess.PIPE,
                                       stdout=subprocess.PIPE)  # fmt: skip
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (len(list(Path("/proc/self/fd").iterdir())) + 10, hard))
            assert flooder.stdout is not None
            await anyio.to_thread.run_sync(flooder.stdout.readline)
            with anyio.fail_after(20):
                while len(list(Path("/proc/self/fd").iterdir())) > 20 + 40:
                    await anyio.sleep(0.05)  # the host closes what is over the cap as it accepts it
        finally:
            resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
            flooder.kill()
            flooder.wait()
            for pipe in (flooder.stdin, flooder.stdout):
                if pipe is not None:
                    pipe.close()
        with anyio.fail_after(20):
            while True:  # the flood's connections are being closed; then the loop takes new ones again
                try:
                    reply = await anyio.to_thread.run_sync(hello, path)
                except OSError:
                    reply = b""
                if reply:
                    break
                await anyio.sleep(0.05)
        assert json.loads(reply)["ok"] is True
