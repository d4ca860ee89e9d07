"""host-door: the relay host's Unix socket as a door. Impostor hosts run as another uid (only when this runs as root):
one in a state dir that user created first, one on a socket in a state dir of ours; every server request is tried
against each, and whatever the impostor receives is a secret sent to another uid (the create carries the whole
environment, GEMINI_API_KEY included). Then a real host in this process is flooded with unauthenticated connections
and unfinished lines from another process (past its cap of 256), and must answer once the flood ends.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import anyio

from bench.reliability.table import Figure, at_least, zero
from gemini_relay.config import Settings
from gemini_relay.errors import RelayError
from gemini_relay.jobs.host_connection import HostConnection
from gemini_relay.jobs.protocol import socket_address, socket_path
from gemini_relay.relay_host.door import take_host_lock
from gemini_relay.relay_host.host import RelayHost

CATEGORY = "host-door"
NOBODY = 65534
IMPOSTOR = """
import os, socket, sys
path, log = sys.argv[1], sys.argv[2]
os.setgid(65534); os.setuid(65534)
server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
server.bind(path); server.listen(16)
print("ready", flush=True)
while True:
    conn, _ = server.accept()
    conn.settimeout(2)
    try:
        data = conn.recv(65536)
    except OSError:
        data = b""
    with open(log, "ab") as out:
        out.write(data)
    try:
        conn.sendall(b'{"ok": true, "protocol": 2, "version": "x"}\\n')
    except OSError:
        pass
    conn.close()
"""
FLOOD = """
import socket, sys
held = []
for n in range(int(sys.argv[2])):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(sys.argv[1])
        if n % 2:
            s.sendall(b'{"op": "hello", "protocol": 2, "version": "x"}\\n' + b"x" * 65536)  # a line never ended
        held.append(s)
    except OSError:
        s.close()
print(len(held), flush=True)
sys.stdin.read()
"""
REQUESTS = (
    {"op": "create", "run_id": "bench", "spec": {}, "backend": "gemini", "options": {}},
    {"op": "run", "job_id": "bench"},
    {"op": "cancel", "job_id": "bench"},
    {"op": "prewarm", "cwd": "/"},
)


@contextlib.contextmanager
def _impostor(state: Path, log: Path) -> Iterator[None]:
    fake = subprocess.Popen([sys.executable, "-c", IMPOSTOR, str(socket_path(state)), str(log)],
                            stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, start_new_session=True)  # fmt: skip
    try:
        assert fake.stdout is not None
        if fake.stdout.readline().strip() != b"ready":
            raise RuntimeError("the impostor host did not start")
        yield
    finally:
        fake.kill()
        fake.wait()
        if fake.stdout is not None:
            fake.stdout.close()


def _state(base: Path, name: str, *, theirs: bool) -> tuple[Path, Path]:
    state = base / name
    host = state / "host"
    host.mkdir(parents=True)
    log = base / f"{name}.received"
    log.touch()
    log.chmod(0o666)
    if theirs:  # that user created the state dir first
        for path in (state, host):
            os.chown(path, NOBODY, NOBODY)
    else:  # ours; its host dir open only while the impostor binds there
        state.chmod(0o711)
        host.chmod(0o777)
    return state, log


def _try_every_request(state: Path, base: Path) -> list[str]:
    settings = Settings.from_env(
        {
            "HOME": str(base),
            "PATH": "/usr/bin",
            "GEMINI_RELAY_PROJECT_ROOT": str(base),
            "GEMINI_RELAY_STATE_DIR": str(state),
            "GEMINI_API_KEY": "bench-secret-key",
        }  # fmt: skip
    )
    accepted: list[str] = []
    for request in REQUESTS:
        message = {**request, "env": dict(settings.env)}
        try:
            HostConnection(settings).request(message, start=False)
            accepted.append(f"{request['op']}: answered by the impostor")
        except (RelayError, OSError, ValueError):  # refused, or the impostor hung up (HostLost)
            pass
    return accepted


def impostors() -> list[Figure]:
    if os.getuid() != 0:
        return [Figure(CATEGORY, "secrets sent to a process of another uid", "skipped (needs root)", "= 0", True)]
    base = Path(tempfile.mkdtemp(prefix="relay-host-door-", dir="/tmp"))
    base.chmod(0o755)
    leaked: list[str] = []
    attempts = 0
    try:
        for name, theirs in (("their-state", True), ("our-state", False)):
            state, log = _state(base, name, theirs=theirs)
            with _impostor(state, log):
                if not theirs:
                    (state / "host").chmod(0o700)
                leaked += [f"{name}: {a}" for a in _try_every_request(state, base)]
                attempts += len(REQUESTS)
            received = log.read_bytes()
            if received:
                leaked.append(f"{name}: the impostor received {len(received)} bytes ({received[:60]!r})")
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return [
        at_least(CATEGORY, "requests tried against impostor hosts of another uid", attempts, len(REQUESTS) * 2),
        zero(CATEGORY, "secrets sent to a process of another uid", leaked),
    ]


async def flood(short: bool) -> list[Figure]:
    """Unauthenticated connections and unfinished lines from another process; the host must still answer."""
    count = 300 if short else 2_000
    base = Path(tempfile.mkdtemp(prefix="relay-host-flood-"))
    settings = Settings.from_env(
        {
            "HOME": str(base),
            "PATH": "/usr/bin",
            "GEMINI_RELAY_PROJECT_ROOT": str(base),
            "GEMINI_RELAY_STATE_DIR": str(base / "state"),
        }  # fmt: skip
    )
    lock = take_host_lock(settings.state_dir)
    assert lock is not None
    host = RelayHost(settings, lock, signals=False)
    unanswered: list[str] = []
    held = 0
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(host.serve)
            await host.listening.wait()
            with socket_address(socket_path(settings.state_dir)) as address:
                flooder = await anyio.open_process([sys.executable, "-c", FLOOD, address, str(count)])
            try:
                assert flooder.stdout is not None
                held = int((await flooder.stdout.receive()).decode().strip() or 0)
            finally:
                flooder.kill()
                await flooder.wait()
                await flooder.aclose()
            # The flood is over: the host (its accept loop, its runs) must be there to answer, not ended by it.
            unanswered += await _answered_within(HostConnection(settings), 10.0)
            host.drain()
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return [
        at_least(CATEGORY, "unauthenticated connections opened to the host socket", held, 1),
        zero(CATEGORY, "host not answering once a connection flood ends (accept loop ended)", unanswered),
    ]


async def _answered_within(client: HostConnection, bound: float) -> list[str]:
    last = ""
    with anyio.move_on_after(bound):
        while True:
            try:
                reply = await anyio.to_thread.run_sync(lambda: client.request({"op": "status"}, start=False))
                if "pid" in reply:
                    return []
                last = str(reply)
            except (OSError, RelayError, ValueError) as exc:
                last = repr(exc)
            await anyio.sleep(0.1)  # the flood's connections are still being closed
    return [f"status after the flood: {last}"]


async def attack(short: bool) -> list[Figure]:
    return [*await anyio.to_thread.run_sync(impostors), *await flood(short)]
