"""The server as a real `gemini-relay --http 127.0.0.1:0` subprocess, for tests of the HTTP transport and its clients.

The server picks a free port and logs its URL; the fixture waits for that line (bounded), then hands out clients.
Without a token given (and without `--no-auth`) the server makes its own in the state dir; clients present that one.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import pytest
from mcp import Client
from mcp.client.session import ElicitationFnT
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from gemini_relay.config import default_state_dir
from tests.executables import spawn_server
from tests.harness import Relay

START_TIMEOUT = 60.0  # a loaded 2-core machine: imports alone take seconds
STOP_TIMEOUT = 15.0
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}
ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
STORED_TOKEN = "http-token"  # the token the server makes in its state dir when none is configured
_URL = re.compile(r"Serving MCP over HTTP at (http://\S+)")


@dataclass
class HttpServer:
    proc: subprocess.Popen[bytes]
    url: str
    token: str | None
    _reader: threading.Thread | None = field(default=None, repr=False)

    @property
    def port(self) -> int:
        return int(self.url.rsplit(":", 1)[1].split("/")[0])

    def headers(self, token: str | None = None) -> dict[str, str]:
        presented = token if token is not None else self.token
        return {"Authorization": f"Bearer {presented}"} if presented else {}

    @asynccontextmanager
    async def client(
        self, mode: str = "legacy", token: str | None = None, elicitation: ElicitationFnT | None = None
    ) -> AsyncIterator[Client]:
        http = create_mcp_http_client(headers=self.headers(token))
        transport = streamable_http_client(self.url, http_client=http)
        async with http, Client(transport, mode=mode, elicitation_callback=elicitation) as client:
            yield client

    def stop(self, sig: signal.Signals = signal.SIGTERM) -> int:
        """Signal the server's process group and wait (bounded) for it; SIGKILL if it does not stop."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, sig)
        try:
            code = self.proc.wait(timeout=STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=STOP_TIMEOUT)
            pytest.fail(f"the HTTP server did not stop within {STOP_TIMEOUT}s of {sig.name}")
        if self._reader is not None:
            self._reader.join(timeout=STOP_TIMEOUT)
        if self.proc.stderr is not None:
            self.proc.stderr.close()
        return code


def bare_env(base: Path) -> dict[str, str]:
    """A world under `base` with no backend to reach: enough for what the server answers by itself."""
    return {
        "PATH": "/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "HOME": str(base),
        "GEMINI_RELAY_STATE_DIR": str(base / "state"),
        "GEMINI_RELAY_PROJECT_ROOT": str(base),
        "GEMINI_MCP_BACKEND": "gemini",
    }


def raw_post(port: int, host: bytes, extra: bytes = b"") -> int:
    """A POST with a Host header no HTTP client library would send; the status it got."""
    request = (
        b"POST /mcp HTTP/1.1\r\nHost: " + host + b"\r\n" + extra
        + b"Content-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}"
    )  # fmt: skip
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(request)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    return int(data.split(b" ", 2)[1])


def _copy(stream: IO[bytes], log: IO[str], found: list[str], ready: threading.Event) -> None:
    for raw in stream:
        line = raw.decode("utf-8", errors="replace")
        log.write(line)
        log.flush()
        match = _URL.search(line)
        if match and not found:
            found.append(match.group(1))
            ready.set()
    ready.set()  # EOF: the server exited before (or after) it served


@contextmanager
def http_server(relay: Relay, *args: str, token: str | None = None, **env: str) -> Iterator[HttpServer]:
    """`gemini-relay --http 127.0.0.1:0 ARGS` in this test's world, stopped (SIGTERM → bounded wait) afterwards."""
    with serve_http({**relay.env, **env}, relay.project, relay.stderr_path, *args, token=token) as server:
        yield server


# Sets the open-files limit, then becomes the server (an exec: no preexec_fn in a process with threads).
_WITH_OPEN_FILES = (
    "import os, resource, sys; resource.setrlimit(resource.RLIMIT_NOFILE, (int(sys.argv[1]), int(sys.argv[2]))); "
    "os.execv(sys.executable, [sys.executable, *sys.argv[3:]])"
)


@contextmanager
def serve_http(
    env: dict[str, str],
    cwd: Path,
    log_path: Path,
    *args: str,
    token: str | None = None,
    open_files: tuple[int, int] | None = None,
) -> Iterator[HttpServer]:
    """The server with exactly `env` (plus the token), its stderr appended to `log_path`; `open_files`: the
    RLIMIT_NOFILE (soft, hard) it starts with."""
    environment = dict(env)
    if token is not None:
        environment["GEMINI_RELAY_HTTP_TOKEN"] = token
    command = ["-m", "gemini_relay", "--http", "127.0.0.1:0", *args]
    if open_files is not None:
        command = ["-c", _WITH_OPEN_FILES, *map(str, open_files), *command]
    proc = spawn_server([sys.executable, *command], cwd=cwd, env=environment)
    assert proc.stderr is not None
    found: list[str] = []
    ready = threading.Event()
    with log_path.open("a", encoding="utf-8") as log:
        reader = threading.Thread(target=_copy, args=(proc.stderr, log, found, ready), daemon=True)
        reader.start()
        server = HttpServer(proc, "", token, reader)
        try:
            if not ready.wait(START_TIMEOUT) or not found:
                server.stop(signal.SIGKILL)
                pytest.fail(f"the HTTP server did not start:\n{log_path.read_text(encoding='utf-8')}")
            server.url = found[0]
            stored = default_state_dir(environment) / STORED_TOKEN
            if token is None and "--no-auth" not in args and stored.exists():
                server.token = stored.read_text(encoding="utf-8").strip()
            yield server
        finally:
            server.stop()
