"""The ways the server is reached: stdio (one client, the default) or Streamable HTTP on loopback (many clients)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import anyio

from gemini_relay.server import RelayServer
from gemini_relay.transports.stdio import serve_stdio

if TYPE_CHECKING:
    import socket

    from gemini_relay.tools.context import Deps
    from gemini_relay.transports.http import HttpOptions


async def run_server(deps: Deps, http: HttpOptions | None = None, sock: socket.socket | None = None) -> None:
    """Serve with the background work: probe warm-up, job upkeep, detached gemini-run followers.

    With `http` (and its bound `sock`) over Streamable HTTP, else over stdio.
    """
    server = RelayServer(deps).build()
    background = [deps.warm_up, deps.maintain]
    async with anyio.create_task_group() as followers:
        deps.background = followers
        await deps.registry.open()  # warm pools live in this task, so they close here too
        try:
            if http is None or sock is None:
                await serve_stdio(server, background, deps.engine.detach)
            else:
                from gemini_relay.transports.http import serve_http  # uvicorn is only imported when serving HTTP

                await serve_http(server, http, sock, background, deps.engine.detach)
        finally:
            with anyio.CancelScope(shield=True):
                await deps.registry.aclose()  # no warm child outlives the server
        followers.cancel_scope.cancel()  # followers of detached jobs stop; the jobs themselves run on


__all__ = ["run_server"]
