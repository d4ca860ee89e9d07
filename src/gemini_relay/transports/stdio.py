"""Serving the MCP server over stdio; a SIGTERM or SIGINT stops in-flight calls (durable jobs are detached first)."""

from __future__ import annotations

import signal
from collections.abc import Callable, Coroutine, Sequence
from typing import Any

import anyio
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage

from gemini_relay.log import logger, requests_log, shown
from gemini_relay.transports.rpc_envelope import error_reply_for
from gemini_relay.transports.stdio_front import StdioFront


async def serve_stdio(
    server: Server[Any],
    background: Sequence[Callable[[], Coroutine[Any, Any, None]]] = (),
    on_shutdown: Callable[[], None] = lambda: None,
    front: StdioFront | None = None,
) -> None:
    """Serve until stdin closes or a signal arrives; `background` tasks (probe warm-ups) are cancelled then.

    `on_shutdown` runs before in-flight calls are cancelled, so durable jobs are detached rather than stopped.
    """
    async with anyio.create_task_group() as tg:
        for task in background:
            tg.start_soon(task)

        async def stop_on_signal() -> None:
            with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT, signal.SIGHUP) as signals:
                async for signum in signals:
                    logger.info("Received %s; detaching jobs and exiting", signal.Signals(signum).name)
                    on_shutdown()
                    tg.cancel_scope.cancel()
                    return

        tg.start_soon(stop_on_signal)
        # With a front, it already owns the wire (and may have answered initialize and tools/list).
        streams: Any = (front.sdk_stdin(), front.sdk_stdout()) if front is not None else (None, None)
        async with stdio_server(*streams) as (read_stream, write_stream):
            notifying = _EofNotifying(read_stream, on_shutdown, write_stream)
            await server.run(notifying, write_stream, server.create_initialization_options())
        on_shutdown()
        # stdin closed: the client is gone.
        tg.cancel_scope.cancel()


class _EofNotifying:
    """A read stream that reports the client hanging up (stdin EOF) before in-flight calls are cancelled, and
    answers a message the SDK could not parse (the SDK would drop it unanswered)."""

    def __init__(self, inner: Any, on_eof: Callable[[], None], replies: Any = None) -> None:
        self._inner = inner
        self._on_eof = on_eof
        self._replies = replies

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def receive(self) -> Any:
        while True:
            try:
                item = await self._inner.receive()
            except (anyio.EndOfStream, anyio.ClosedResourceError):
                self._on_eof()
                raise
            reply = error_reply_for(item) if isinstance(item, Exception) and self._replies is not None else None
            if reply is None:
                return item
            requests_log.info(
                "Answered an invalid JSON-RPC line (id %s) with error %d: %s",
                shown(reply.id), reply.error.code, shown(reply.error.message),
            )  # fmt: skip
            await self._replies.send(SessionMessage(message=reply))

    def __aiter__(self) -> _EofNotifying:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> _EofNotifying:
        await self._inner.__aenter__()
        return self

    async def __aexit__(self, *exc: object) -> bool | None:
        result: bool | None = await self._inner.__aexit__(*exc)
        return result
