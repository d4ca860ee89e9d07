"""Connections an HTTP client holds open without finishing a request: idle, half a request head, half a body.

Shared by the HTTP door's limit tests and `bench.reliability`: loopback only, non-blocking sockets, every wait
bounded.
"""

from __future__ import annotations

import contextlib
import resource
import selectors
import socket
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager


def _head(port: int, *, authorization: str = "", length: int | None = None) -> bytes:
    """A POST /mcp request head; without `length` it lacks its closing blank line (half a head)."""
    lines = [b"POST /mcp HTTP/1.1", f"Host: 127.0.0.1:{port}".encode(), b"Content-Type: application/json"]
    if authorization:
        lines.append(f"Authorization: {authorization}".encode())
    if length is None:
        return b"\r\n".join(lines) + b"\r\n"
    lines.append(f"Content-Length: {length}".encode())
    return b"\r\n".join(lines) + b"\r\n\r\n"


def half_head(port: int) -> bytes:
    return _head(port)


def half_body(port: int, authorization: str = "") -> bytes:
    """A whole head announcing 1,000 bytes of body, and one of them."""
    return _head(port, authorization=authorization, length=1000) + b"{"


def raise_open_files(wanted: int) -> None:
    """This process's soft RLIMIT_NOFILE raised to hold `wanted` sockets (never past the hard limit)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if soft != resource.RLIM_INFINITY and soft < target:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))


@contextmanager
def held(port: int, sends: Sequence[bytes], within: float = 20.0) -> Iterator[list[socket.socket]]:
    """One connection per entry of `sends`, each sent its bytes (b"": nothing) once connected: those that did
    connect, all closed after.

    Connects are non-blocking and waited for together (bounded by `within`): a server that stopped accepting
    leaves some unconnected, which is the finding, not a hang.
    """
    raise_open_files(len(sends) + 256)
    socks: list[socket.socket] = []
    connected: list[socket.socket] = []
    try:
        with selectors.DefaultSelector() as selector:
            for data in sends:
                sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                sock.setblocking(False)
                socks.append(sock)
                if sock.connect_ex(("127.0.0.1", port)) in (0, 115):  # 115: EINPROGRESS
                    selector.register(sock, selectors.EVENT_WRITE, data)
            deadline = time.monotonic() + within
            while selector.get_map() and time.monotonic() < deadline:
                for key, _ in selector.select(timeout=max(0.0, deadline - time.monotonic())):
                    selector.unregister(key.fileobj)
                    ready = key.fileobj
                    assert isinstance(ready, socket.socket)
                    if ready.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0:
                        connected.append(ready)
                        with contextlib.suppress(OSError):
                            ready.send(key.data)
        yield connected
    finally:
        for sock in socks:
            sock.close()


def is_open(sock: socket.socket) -> bool:
    """Whether the server still holds the connection: what it sent is read, then EOF or a reset means closed."""
    while True:
        try:
            data = sock.recv(65536, socket.MSG_DONTWAIT)
        except BlockingIOError:
            return True
        except OSError:
            return False
        if not data:
            return False


def wait_closed(socks: Sequence[socket.socket], within: float) -> list[socket.socket]:
    """Wait (bounded) until the server has closed every one of `socks`; those it still holds."""
    deadline = time.monotonic() + within
    left = [s for s in socks if is_open(s)]
    with selectors.DefaultSelector() as selector:
        for sock in left:
            selector.register(sock, selectors.EVENT_READ)
        while left and time.monotonic() < deadline:
            for key, _ in selector.select(timeout=max(0.0, deadline - time.monotonic())):
                ready = key.fileobj
                assert isinstance(ready, socket.socket)
                if not is_open(ready):
                    selector.unregister(ready)
                    left.remove(ready)
    return left
