"""A cap on legacy (2025) MCP sessions per server, making room by ending the session idle the longest.

The SDK keeps up to 10,000 sessions and refuses the next initialize with 503 until one idles out (30 minutes):
one client opened all 10,000 in 72 s (RSS 73 -> 460 MB) and locked every other legacy client out for half an hour.
Here at most MAX_SESSIONS live at once; an initialize at the cap first ends the session whose last request ended
longest ago, as its client would (a DELETE), so its id answers 404 and its client initializes again. A session with
a request in flight (a call, an open listen stream) is never ended: with all of them busy, the SDK's 503 stands.
Sessions still expire after SESSION_IDLE without a request (the SDK's own timeout, set to the same value).
"""

from __future__ import annotations

from dataclasses import dataclass

import anyio
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from gemini_relay.log import logger

MAX_SESSIONS = 256  # ~40 KB each: about 10 MB at the cap
SESSION_IDLE = 30 * 60.0  # seconds without a request before the SDK ends a session
_SESSION = b"mcp-session-id"


@dataclass
class _Session:
    last: float  # when its last request ended
    busy: int = 0  # its requests in flight


class SessionCap:
    """ASGI middleware in front of the SDK's app: tracks the sessions it opens and ends the idlest at the cap."""

    def __init__(self, app: ASGIApp, path: str, cap: int = MAX_SESSIONS, idle: float = SESSION_IDLE) -> None:
        self.app = app
        self._path = path
        self.cap = cap
        self._idle = idle
        self._sessions: dict[str, _Session] = {}
        self.evicted = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] != self._path:
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        session_id = headers.get("mcp-session-id")
        if session_id is None:
            await self._opening(scope, receive, send, headers)
            return
        session = self._sessions.get(session_id)
        if session is None:  # unknown, or ended: the SDK answers 404
            await self.app(scope, receive, send)
            return
        session.busy += 1
        ended = False

        async def watched(message: Message) -> None:
            nonlocal ended
            if message["type"] == "http.response.start":
                status = message["status"]
                ended = status == 404 or (scope["method"] == "DELETE" and status < 300)
            await send(message)

        try:
            await self.app(scope, receive, watched)
        finally:
            session.busy -= 1
            session.last = anyio.current_time()
            if ended:
                self._sessions.pop(session_id, None)

    async def _opening(self, scope: Scope, receive: Receive, send: Send, headers: Headers) -> None:
        """A request without a session id: an initialize at the cap makes room first; a new session is recorded."""
        version = headers.get("mcp-protocol-version")
        legacy = scope["method"] == "POST" and (version is None or version in HANDSHAKE_PROTOCOL_VERSIONS)
        if legacy:
            await self._make_room(scope)
        opened: list[str] = []

        async def watched(message: Message) -> None:
            if message["type"] == "http.response.start" and message["status"] < 400:
                found = dict(message.get("headers", [])).get(_SESSION)
                if found:
                    opened.append(found.decode("latin-1"))
                    self._sessions[opened[0]] = _Session(anyio.current_time(), busy=1)
            await send(message)

        try:
            await self.app(scope, receive, watched)
        finally:
            if opened and (session := self._sessions.get(opened[0])) is not None:
                session.busy -= 1
                session.last = anyio.current_time()

    async def _make_room(self, scope: Scope) -> None:
        now = anyio.current_time()
        for session_id, session in list(self._sessions.items()):
            if not session.busy and now - session.last >= self._idle:
                del self._sessions[session_id]  # the SDK has ended it on its own
        while len(self._sessions) >= self.cap:
            idle = [(s.last, i) for i, s in self._sessions.items() if not s.busy]
            if not idle:
                return  # every session is in use: the SDK refuses this one (503)
            _, oldest = min(idle)
            del self._sessions[oldest]
            self.evicted += 1
            await self._end(scope, oldest)
        if self.evicted and self.evicted % 100 == 1:
            logger.info("Session cap (%d) reached: ended %d idle session(s) so far", self.cap, self.evicted)

    async def _end(self, scope: Scope, session_id: str) -> None:
        """DELETE the session through the SDK, as its client would; the answer goes nowhere."""
        kept = [(name, value) for name, value in scope["headers"] if name in (b"host", b"origin")]
        delete: Scope = {
            **scope,
            "method": "DELETE",
            "headers": [*kept, (_SESSION, session_id.encode("latin-1"))],
            "query_string": b"",
        }

        async def nothing() -> Message:
            return {"type": "http.request", "body": b"", "more_body": False}

        async def discard(message: Message) -> None:
            pass

        await self.app(delete, nothing, discard)
