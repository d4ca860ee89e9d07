"""The host's UNIX socket streams survive a read cancelled just as its socket became readable."""

from __future__ import annotations

import asyncio
import socket
from typing import Any

import anyio
import pytest
from anyio.abc import ByteStream

import gemini_relay.jobs.protocol  # noqa: F401  - what every server and host imports before a channel exists

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the race is in anyio's asyncio backend (its raw-socket UNIX streams)


async def test_a_read_cancelled_in_the_iteration_its_socket_became_readable_raises_nothing_out_of_the_loop() -> None:
    """A server attached to a run is cancelled (its client went away) in the loop iteration whose poll found the
    host's next message: the readiness callback, queued before the read's cleanup ran, meets a cancelled wait. It
    raised InvalidStateError out of the event loop (a media test failed so in CI)."""
    loop = asyncio.get_running_loop()
    errors: list[dict[str, Any]] = []
    loop.set_exception_handler(lambda _loop, context: errors.append(context))
    ours, theirs = socket.socketpair(socket.AF_UNIX)
    stream = _stream_of(ours)
    scope = anyio.CancelScope()

    async def read() -> None:
        with scope:
            await stream.receive()

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(read)
            with anyio.fail_after(5):
                while _reader_of(loop, ours) is None:  # the read waits on its socket
                    await anyio.sleep(0)
            ready = _reader_of(loop, ours)
            assert ready is not None
            theirs.sendall(b'{"result": {}}\n')  # the host's message arrives ...
            scope.cancel()  # ... and the read is cancelled, in one iteration, before the poll's callback runs:
            ready._run()  # pyright: ignore[reportPrivateUsage]
    finally:
        await stream.aclose()
        theirs.close()
    assert [context.get("exception") for context in errors] == []


def _stream_of(sock: socket.socket) -> ByteStream:
    from anyio._backends._asyncio import UNIXSocketStream  # noqa: PLC0415 - what connect_unix returns on asyncio

    sock.setblocking(False)
    return UNIXSocketStream(sock)


def _reader_of(loop: asyncio.AbstractEventLoop, sock: socket.socket) -> asyncio.Handle | None:
    selector = loop._selector  # type: ignore[attr-defined]  # pyright: ignore[reportAttributeAccessIssue,reportUnknownMemberType,reportUnknownVariableType]
    try:
        key = selector.get_key(sock.fileno())  # pyright: ignore[reportUnknownMemberType,reportUnknownVariableType]
    except KeyError:
        return None
    reader: asyncio.Handle | None = key.data[0]  # pyright: ignore[reportUnknownMemberType]
    return reader
