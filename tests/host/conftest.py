"""Host test worlds: the relay harness with GEMINI_RELAY_HOST=on; the host is shut down before the world is checked
for leftover processes."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from gemini_relay import __version__
from gemini_relay.jobs.protocol import PROTOCOL, socket_address
from tests.harness import Relay, processes_using

HOST_ENV = {"GEMINI_RELAY_HOST": "on", "GEMINI_RELAY_HOST_IDLE": "30", "GEMINI_RELAY_TOOLSETS": "jobs"}


def state_dir(relay: Relay) -> Path:
    return relay.home / ".local" / "state" / "gemini-relay"


def host_socket(relay: Relay) -> Path:
    return state_dir(relay) / "host" / "host.sock"


@contextmanager
def host_connection(path: Path, timeout: float) -> Iterator[socket.socket]:
    """A connection to the host's socket at `path`, each read and write bounded by `timeout` seconds."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        with socket_address(path) as address:
            sock.connect(address)
        yield sock


def host_request(relay: Relay, *messages: dict[str, Any], version: str = __version__) -> list[dict[str, Any]]:
    """Greet the host and send `messages`; every reply, the hello's first."""
    with host_connection(host_socket(relay), 10) as sock, sock.makefile("rwb") as stream:
        replies = []
        for message in ({"op": "hello", "protocol": PROTOCOL, "version": version}, *messages):
            stream.write(json.dumps(message).encode() + b"\n")
            stream.flush()
            replies.append(json.loads(stream.readline()))
        return replies


@pytest.fixture
def hosted(relay: Relay) -> Relay:
    """The world with the host on explicitly (the harness shuts the host down before checking for leftovers)."""
    relay.env.update(HOST_ENV)
    return relay


def host_pids(relay: Relay) -> list[int]:
    """Live relay host processes of this test world."""
    return [pid for pid in processes_using(relay.home) if b"host" in _cmdline(pid)]


def server_pids(relay: Relay) -> list[int]:
    """Live relay server processes of this test world (not hosts, not supervisors, not CLIs)."""
    return [
        pid
        for pid in processes_using(relay.home)
        if b"gemini_relay" in (cmd := _cmdline(pid)) and b"host" not in cmd and b"run-job" not in cmd
    ]


def _cmdline(pid: int) -> list[bytes]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return []
