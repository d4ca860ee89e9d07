"""The page's HTTP routes beside /mcp: the HTML and its static files, job JSON, server-sent events, media files.

The Door in front (guard.py) has already checked Host and Origin, and the bearer token on every path but the page's
own files (HTML, script, style: no data). Every answer carries a strict Content-Security-Policy; job text is data
the page renders as text, never markup. Media reach the page as blobs its script fetched with the token.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from importlib import resources

import anyio
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, PlainTextResponse, Response, StreamingResponse
from starlette.routing import BaseRoute, Route

from gemini_relay.jobs.store.job_store import JobNotFound
from gemini_relay.transports.page.feed import JobFeed

EVENT_INTERVAL = 0.5  # seconds between store reads per stream: the bound on the event rate
KEEPALIVE = 15.0  # a comment line this often keeps idle proxies and the browser's reconnect timer quiet
MAX_STREAMS = 16  # open event streams: a runaway script opening streams gets 503, not unbounded connections
CSP = (
    "default-src 'self'; img-src 'self' blob:; media-src 'self' blob:; script-src 'self'; style-src 'self'; "
    "object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-store",
}
STATIC = {  # path -> (package file, content type)
    "/": ("index.html", "text/html; charset=utf-8"),
    "/page.js": ("page.js", "text/javascript; charset=utf-8"),
    "/page.css": ("page.css", "text/css; charset=utf-8"),
}
PAGE_PATHS = frozenset(STATIC) | {"/events"}
PAGE_PREFIXES = ("/api/", "/files/")


def is_page_path(path: str) -> bool:
    return path in PAGE_PATHS or path.startswith(PAGE_PREFIXES)


def is_page_asset(path: str) -> bool:
    """The page's own files: they hold no data, so they open without the token (a browser cannot send a header)."""
    return path in STATIC


def _asset(name: str) -> bytes:
    return resources.files("gemini_relay.transports.page").joinpath("static", name).read_bytes()


class Page:
    """The page's endpoints over one JobFeed; `close()` ends every event stream (server shutdown)."""

    def __init__(self, feed: JobFeed) -> None:
        self.feed = feed
        self.closed = anyio.Event()
        self._streams = 0
        self._assets = {path: (_asset(name), kind) for path, (name, kind) in STATIC.items()}
        self._lock = anyio.Lock()  # the feed's caches are shared: one reader thread at a time
        self._shared: tuple[float, dict[str, object]] | None = None

    def close(self) -> None:
        self.closed.set()

    def routes(self) -> list[BaseRoute]:
        static = [Route(path, self._static, methods=["GET", "HEAD"]) for path in STATIC]
        return [
            *static,
            Route("/api/jobs", self._jobs, methods=["GET"]),
            Route("/api/jobs/{job_id}", self._job, methods=["GET"]),
            Route("/events", self._events, methods=["GET"]),
            Route("/files/{job_id}/{index:int}", self._file, methods=["GET", "HEAD"]),
        ]

    async def _snapshot(self) -> dict[str, object]:
        """The feed's snapshot, shared by every stream that asks within one interval: tabs do not multiply reads."""
        async with self._lock:
            if self._shared is not None and time.monotonic() - self._shared[0] < EVENT_INTERVAL * 0.8:
                return self._shared[1]
            snapshot = await anyio.to_thread.run_sync(self.feed.snapshot)
            self._shared = (time.monotonic(), snapshot)
            return snapshot

    async def _static(self, request: Request) -> Response:
        body, kind = self._assets[request.url.path]
        return Response(body, media_type=kind, headers=SECURITY_HEADERS)

    async def _jobs(self, request: Request) -> Response:
        return JSONResponse(await self._snapshot(), headers=SECURITY_HEADERS)

    async def _job(self, request: Request) -> Response:
        job_id = request.path_params["job_id"]
        try:
            async with self._lock:
                detail = await anyio.to_thread.run_sync(self.feed.detail, job_id)
        except JobNotFound:
            return PlainTextResponse("No such job", status_code=404, headers=SECURITY_HEADERS)
        return JSONResponse(detail, headers=SECURITY_HEADERS)

    async def _file(self, request: Request) -> Response:
        """Only a file the job recorded, inside the allowed roots (checked again now), and a media type."""
        job_id, index = request.path_params["job_id"], request.path_params["index"]
        try:
            files = await anyio.to_thread.run_sync(self.feed.media, job_id)
        except JobNotFound:
            files = []
        item = next((f for f in files if f.index == index), None)
        if item is None:
            return PlainTextResponse("No such file", status_code=404, headers=SECURITY_HEADERS)
        headers = {**SECURITY_HEADERS, "Cache-Control": "private, max-age=60"}
        return FileResponse(item.path, media_type=item.content_type, headers=headers)

    async def _events(self, request: Request) -> Response:
        if self._streams >= MAX_STREAMS:
            return PlainTextResponse("Too many event streams", status_code=503, headers={"Retry-After": "5"})
        headers = {**SECURITY_HEADERS, "X-Accel-Buffering": "no"}
        return StreamingResponse(self._stream(), media_type="text/event-stream", headers=headers)

    async def _stream(self) -> AsyncIterator[str]:
        self._streams += 1
        try:
            yield "retry: 2000\n\n"
            last = ""
            quiet = 0.0
            while not self.closed.is_set():
                body = json.dumps(await self._snapshot(), ensure_ascii=False, separators=(",", ":"))
                if body != last:
                    last, quiet = body, 0.0
                    yield f"event: jobs\ndata: {body}\n\n"
                elif quiet >= KEEPALIVE:
                    quiet = 0.0
                    yield ": keepalive\n\n"
                with anyio.move_on_after(EVENT_INTERVAL):
                    await self.closed.wait()
                quiet += EVENT_INTERVAL
            yield "event: bye\ndata: {}\n\n"  # shutdown: the page shows it is disconnected, then retries
        finally:
            self._streams -= 1
