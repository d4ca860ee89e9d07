"""Serving the MCP server over stdio; a SIGTERM or SIGINT stops in-flight runs (their process groups) first."""

from __future__ import annotations

import signal
from typing import Any

import anyio
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from gemini_relay.log import logger


async def serve_stdio(server: Server[Any]) -> None:
    async with anyio.create_task_group() as tg:

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
