"""Serving the MCP server over stdio; a SIGTERM or SIGINT stops in-flight runs (their process groups) first."""

from __future__ import annotations

import signal
from collections.abc import Callable, Coroutine, Sequence
from typing import Any

import anyio
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from gemini_relay.log import logger


async def serve_stdio(server: Server[Any], background: Sequence[Callable[[], Coroutine[Any, Any, None]]] = ()) -> None:
    """Serve until stdin closes or a signal arrives; `background` tasks (probe warm-ups) are cancelled then."""
    async with anyio.create_task_group() as tg:
        for task in background:
            tg.start_soon(task)

        async def stop_on_signal() -> None:
            with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT, signal.SIGHUP) as signals:
                async for signum in signals:
                    logger.info("Received %s; stopping runs and exiting", signal.Signals(signum).name)
                    tg.cancel_scope.cancel()
                    return

        tg.start_soon(stop_on_signal)
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())
        # stdin closed: the client is gone.
        tg.cancel_scope.cancel()
