"""The raw JSON-RPC task client of tests/task_client.py, in memory: the real server (RelayServer(deps).build()) served
by the SDK's own stdio transport over in-process line streams instead of a process's stdin and stdout, so the lines
the client reads are the bytes stdio would carry, and nothing is spawned.

`on_line` sees every line the server writes, as it writes it: a test's event to release a held script on (a
subscription's acknowledgement, a task status), so nothing sleeps.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.server.stdio import stdio_server

from gemini_relay.app import build_deps
from gemini_relay.core.vocabulary import BackendName
from gemini_relay.server.relay import RelayServer
from tests.inmemory.conftest import InMemory
from tests.task_client import MODERN, TaskClient, handshake

LINE_BUFFER = 1000  # lines either way; a test never has this many in flight


class _Lines:
    """The server's stdin: each line the client sent, as text."""

    def __init__(self, source: MemoryObjectReceiveStream[bytes]) -> None:
        self._source = source

    def __aiter__(self) -> _Lines:
        return self

    async def __anext__(self) -> str:
        try:
            return (await self._source.receive()).decode("utf-8")
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            raise StopAsyncIteration from None


class _Out:
    """The server's stdout: each written line goes to the client (and to `on_line`)."""

    def __init__(self, sink: MemoryObjectSendStream[bytes], on_line: Callable[[dict[str, Any]], None]) -> None:
        self._sink = sink
        self._on_line = on_line

    async def write(self, text: str) -> None:
        self._on_line(json.loads(text))
        await self._sink.send(text.encode("utf-8"))

    async def flush(self) -> None:
        return None


class _Pipes:
    """What TaskClient needs of a process: a byte stream to its stdin and one from its stdout."""

    def __init__(self, stdin: MemoryObjectSendStream[bytes], stdout: MemoryObjectReceiveStream[bytes]) -> None:
        self.stdin = stdin
        self.stdout = stdout


@asynccontextmanager
async def memory_task_client(
    world: InMemory,
    version: str = MODERN,
    *,
    env: dict[str, str] | None = None,
    on_line: Callable[[dict[str, Any]], None] = lambda _line: None,
    **client: Any,
) -> AsyncIterator[TaskClient]:
    """`client`: TaskClient's own options (`extension`, `capabilities`), as task_client takes them."""
    to_server, server_in = anyio.create_memory_object_stream[bytes](LINE_BUFFER)
    server_out, from_server = anyio.create_memory_object_stream[bytes](LINE_BUFFER)
    deps = build_deps(world.settings(**(env or {})), backends={BackendName("gemini"): world.backend})
    server = RelayServer(deps).build()
    async with to_server, server_in, server_out, from_server, deps.serving(), anyio.create_task_group() as background:
        deps.background = background

        async def serve() -> None:
            stdin: Any = _Lines(server_in)
            stdout: Any = _Out(server_out, on_line)
            async with stdio_server(stdin, stdout) as (read_stream, write_stream):
                await server.run(read_stream, write_stream, server.create_initialization_options())

        background.start_soon(serve)
        process: Any = _Pipes(to_server, from_server)
        tasks = TaskClient(process, version, **client)
        await handshake(tasks)
        yield tasks
        await to_server.aclose()  # stdin closed: the client is gone
        background.cancel_scope.cancel()
