"""run_server: the server with its background work, over stdio (one client, the default) or Streamable HTTP on
loopback (many clients)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import anyio

from gemini_relay.jobs.store.file_store import FileJobStore
from gemini_relay.server.relay import RelayServer
from gemini_relay.tools.common.media_config import OUTPUT_DIR_ENVS, first_env
from gemini_relay.tools.jobs.quota import refresh_quota
from gemini_relay.transports.stdio import serve_stdio

if TYPE_CHECKING:
    import socket

    from gemini_relay.tools.common.context import Deps
    from gemini_relay.transports.http import HttpOptions
    from gemini_relay.transports.page import Page
    from gemini_relay.transports.stdio_front import StdioFront


async def run_server(
    deps: Deps, http: HttpOptions | None = None, sock: socket.socket | None = None, front: StdioFront | None = None
) -> None:
    """Serve with the background work: probe warm-up, job upkeep, the quota refresh, detached gemini-run followers.

    With `http` (and its bound `sock`) over Streamable HTTP, else over stdio (through `front` when it owns stdio).
    """
    server = RelayServer(deps).build()

    async def refresh() -> None:
        await refresh_quota(deps)

    background = [deps.warm_up, deps.maintain, refresh]
    async with deps.serving(), anyio.create_task_group() as followers:
        deps.background = followers
        await deps.registry.open()  # warm pools live in this task, so they close here too
        try:
            if http is None or sock is None:
                await serve_stdio(server, background, deps.runs.detach, front)
            else:
                from gemini_relay.transports.http import serve_http  # uvicorn is only imported when serving HTTP

                await serve_http(server, http, sock, background, deps.runs.detach, page=_page(deps))
        finally:
            # No shield scope of our own around it: the pools' task groups were entered before it, and closing them
            # inside a newer scope is a RuntimeError that skipped the other pools. Each pool shields its stops.
            await deps.registry.aclose()  # no warm child outlives the server
        followers.cancel_scope.cancel()  # followers of detached jobs stop; the jobs themselves run on


def _page(deps: Deps) -> Page | None:
    """The job page over the shared state dir; its files may come from the project, media or image folders."""
    from gemini_relay.transports.page import JobFeed, Page

    if deps.jobs is None:
        return None
    settings = deps.settings
    roots = [settings.project_root]
    media = first_env(settings.env, OUTPUT_DIR_ENVS)  # where generated media is written, by either name
    if media:
        roots.append(Path(media).expanduser())
    if settings.image_dir is not None:
        roots.append(settings.image_dir)
    store = deps.jobs.store
    assert isinstance(store, FileJobStore)  # the page reads the shared state dir; only durable servers have one
    return Page(JobFeed(store, tuple(roots)))


__all__ = ["run_server"]
