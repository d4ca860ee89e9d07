"""Serving the MCP server over Streamable HTTP (the SDK's transport on uvicorn) at http://HOST:PORT/mcp.

One process serves many clients: each legacy client (2025-06-18 / 2025-11-25) gets an `Mcp-Session-Id` session,
2026-07-28 clients are served statelessly; all share one tool table, run engine and job store.
Shutdown (SIGTERM, SIGINT, SIGHUP): durable jobs are detached, new requests get 503, calls in flight get a short
grace to finish, then the listener closes; the jobs run on and stay collectable.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import socket
import sys
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass
from typing import Any

import anyio
import uvicorn
from anyio.abc import TaskStatus
from mcp.server.lowlevel import Server
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from gemini_relay.log import logger
from gemini_relay.transports.address import Address
from gemini_relay.transports.connections import KEEP_ALIVE, MAX_HEAD, Connections, connection_cap, raise_open_files
from gemini_relay.transports.guard import Door, security_settings
from gemini_relay.transports.http_envelope import EnvelopeCheck
from gemini_relay.transports.page import Page, is_page_asset, is_page_path
from gemini_relay.transports.sessions import MAX_SESSIONS, SESSION_IDLE, SessionCap
from gemini_relay.transports.token import NO_AUTH_MEANS, HttpAuth, how_to_connect

MAX_BODY_BYTES = 4 * 1024 * 1024  # a prompt with inlined files is far below this; more is a mistake or abuse
SHUTDOWN_GRACE = 5.0  # seconds calls in flight get to finish after a signal; their jobs run on regardless
PATH = "/mcp"
BACKLOG = 2048  # connections the kernel queues before accept: a flood must not make an authorised connect wait
# asyncio accepts up to its listen backlog per wakeup before any connection is set up (and a surplus one closed):
# a small batch keeps the descriptors in flight well under the open-files limit through a flood.
ACCEPT_BATCH = 64


@dataclass(frozen=True)
class HttpOptions:
    address: Address
    auth: HttpAuth  # a token, or NO_AUTH only when --no-auth asked for it
    max_body: int = MAX_BODY_BYTES
    shutdown_grace: float = SHUTDOWN_GRACE


def bind(address: Address) -> socket.socket:
    """The listening socket, bound before the app is built so port 0 (any free port) has a known number."""
    family, kind, proto, _, sockaddr = socket.getaddrinfo(address.host, address.port, type=socket.SOCK_STREAM)[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(sockaddr)
        sock.listen(BACKLOG)
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(False)
    return sock


class _Draining:
    """Counts requests in flight and refuses new ones (503) once shutdown has begun."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.closing = False
        self._calls = 0  # POSTs: JSON-RPC requests awaiting an answer (GET streams only listen)
        self._idle = anyio.Event()
        self._idle.set()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if self.closing:
            response = PlainTextResponse("gemini-relay is shutting down", status_code=503, headers={"Retry-After": "1"})
            await response(scope, receive, send)
            return
        if scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        self._calls += 1
        self._idle = anyio.Event() if self._calls == 1 else self._idle
        try:
            await self.app(scope, receive, send)
        finally:
            self._calls -= 1
            if self._calls == 0:
                self._idle.set()

    async def drain(self, grace: float) -> int:
        """Stop admitting requests, wait up to `grace` seconds for the ones in flight; how many are left."""
        self.closing = True
        with anyio.move_on_after(grace):
            await self._idle.wait()
        return self._calls


class _Uvicorn(uvicorn.Server):
    """uvicorn without its own signal handlers: the relay handles signals (detach jobs first, then drain).

    asyncio takes one number for the kernel's queue and its accept batch (`backlog`): the batch is ACCEPT_BATCH,
    then the queue is lengthened again to BACKLOG once the socket serves.
    """

    @contextlib.contextmanager
    def capture_signals(self) -> Any:
        yield

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        for sock in sockets or []:
            sock.listen(BACKLOG)


def build_app(server: Server[Any], options: HttpOptions, port: int, page: Page | None = None) -> ASGIApp:
    security = security_settings(options.address, port)
    app = server.streamable_http_app(
        streamable_http_path=PATH,
        max_request_body_size=options.max_body,
        transport_security=security,
        session_idle_timeout=SESSION_IDLE,
        max_sessions=MAX_SESSIONS,
    )
    if page is not None:
        app.router.routes.extend(page.routes())
    checked = EnvelopeCheck(SessionCap(app, PATH), PATH, options.max_body)
    is_open = is_page_asset if page is not None else lambda path: False
    return Door(checked, security, options.auth.token, is_open=is_open, is_page=is_page_path)


async def serve_http(
    server: Server[Any],
    options: HttpOptions,
    sock: socket.socket,
    background: Sequence[Callable[[], Coroutine[Any, Any, None]]] = (),
    on_shutdown: Callable[[], None] = lambda: None,
    page: Page | None = None,
) -> None:
    """Serve on `sock` until a signal arrives; `on_shutdown` runs first, so durable jobs are detached, not stopped.

    With `page`, the job page is served at `/` beside /mcp, behind the same door.
    """
    port = sock.getsockname()[1]
    draining = _Draining(build_app(server, options, port, page))
    connections = Connections(connection_cap(raise_open_files()))
    config = uvicorn.Config(
        draining,
        http=connections.protocol(),  # h11 with header and body deadlines and a connection cap (connections.py)
        timeout_keep_alive=KEEP_ALIVE,
        backlog=ACCEPT_BATCH,
        h11_max_incomplete_event_size=MAX_HEAD,
        lifespan="on",
        log_config=None,  # keep the relay's own stderr format; uvicorn's loggers are quietened below
        access_log=False,
        server_header=False,
        timeout_graceful_shutdown=1,  # after draining, only idle listen streams are left to close
    )
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        logging.getLogger(name).setLevel(logging.WARNING)
    web = _Uvicorn(config)

    async with anyio.create_task_group() as tg:
        for task in background:
            tg.start_soon(task)

        async def stop_on_signal(*, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
            with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT, signal.SIGHUP) as signals:
                task_status.started()
                async for signum in signals:
                    logger.info("Received %s; detaching jobs and shutting down", signal.Signals(signum).name)
                    on_shutdown()
                    if page is not None:
                        page.close()  # event streams end now, not at uvicorn's graceful-shutdown timeout
                    left = await draining.drain(options.shutdown_grace)
                    if left:
                        logger.info("%d call(s) still running; their jobs continue and stay collectable", left)
                    web.should_exit = True
                    return

        await tg.start(stop_on_signal)  # before the URL is announced: a signal from then on is a graceful stop
        _announce(options, port, page is not None)
        await web.serve(sockets=[sock])
        on_shutdown()
        if page is not None:
            page.close()
        tg.cancel_scope.cancel()


def _announce(options: HttpOptions, port: int, page: bool) -> None:
    """Where to connect and how to authenticate; the token itself only on a terminal (a captured stderr is a log)."""
    base = f"http://{options.address.url_host}:{port}"
    header, page_url = how_to_connect(options.auth, base, shown=sys.stderr.isatty())
    if options.auth.token is None:
        logger.info("Serving MCP over HTTP at %s%s (no token: --no-auth)", base, PATH)
        logger.warning("NO AUTHENTICATION (--no-auth): %s", NO_AUTH_MEANS.format(where=base.removeprefix("http://")))
    else:
        logger.info("Serving MCP over HTTP at %s%s (bearer token required)", base, PATH)
        logger.info("Clients send the header  %s", header)
    if page:
        logger.info("Job page at %s", page_url)
