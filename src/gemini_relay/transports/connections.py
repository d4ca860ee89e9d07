"""Bounded connections at the HTTP door: timeouts for a request head and body, and a cap on open connections.

uvicorn closes a keep-alive connection after `timeout_keep_alive`, but a connection that never sends a whole
request head, or never finishes its body, it holds forever: 1,100 such connections took every descriptor of a
1,024 limit and an authorised call went unanswered. So each connection here has a deadline while it waits for a
request head (HEADER_TIMEOUT, not reset by partial data) and while its body arrives (BODY_TIMEOUT); once a request
is whole, the app has it with no deadline (a long tool call, a listen stream). At the cap, a new connection closes
the one that has waited longest for a request head; only when every connection is busy with a request is the new
one refused (503). uvicorn's limit_concurrency does not fit: it counts idle connections too, so an idle flood would
make it refuse the authorised call with 503.
"""

from __future__ import annotations

import asyncio
import resource
from collections import OrderedDict
from enum import Enum
from typing import Any, ClassVar

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from gemini_relay.log import logger, requests_log

HEADER_TIMEOUT = 10.0  # seconds from connecting (or the last answer) to a whole request head
BODY_TIMEOUT = 10.0  # seconds from the head to the end of the body (4 MiB over loopback takes milliseconds)
KEEP_ALIVE = 5  # seconds an idle keep-alive connection stays open after an answer (uvicorn's default)
MAX_CONNECTIONS = 512
MAX_HEAD = 16 * 1024  # bytes of request line and headers (h11's own default, stated)
_REFUSED = (
    b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain; charset=utf-8\r\nretry-after: 1\r\n"
    b"connection: close\r\ncontent-length: 20\r\n\r\nToo many connections"
)


class _Phase(Enum):
    WAITING = "waiting for a request head"  # the only phase a new connection may close to make room
    BODY = "receiving a body"
    BUSY = "the app has the request"


def raise_open_files() -> int:
    """The soft RLIMIT_NOFILE raised to the hard limit (connections and job pipes need descriptors); the new soft."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = hard if hard != resource.RLIM_INFINITY else max(soft, 1 << 20)
    if soft == resource.RLIM_INFINITY or soft >= target:
        return soft
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    except (ValueError, OSError) as exc:
        logger.warning("Could not raise the open-files limit from %d to %d: %s", soft, target, exc)
        return soft
    return target


def connection_cap(open_files: int) -> int:
    """MAX_CONNECTIONS, or half the open-files limit when that is lower: the rest is for jobs, files and pipes."""
    return max(16, min(MAX_CONNECTIONS, open_files // 2))


class Connections:
    """The open connections of one server, those waiting for a request head in the order they began waiting."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.open: set[GuardedH11] = set()
        self.waiting: OrderedDict[GuardedH11, None] = OrderedDict()

    def admit(self, connection: GuardedH11) -> bool:
        if len(self.open) >= self.cap:
            if not self.waiting:
                requests_log.info("Refused a connection (503): all %d connections are busy with requests", self.cap)
                return False
            requests_log.info("Connection cap (%d) reached: closed the one waiting longest for a request", self.cap)
            oldest, _ = self.waiting.popitem(last=False)
            self.forget(oldest)
            oldest.drop()
        self.open.add(connection)
        return True

    def forget(self, connection: GuardedH11) -> None:
        self.open.discard(connection)
        self.waiting.pop(connection, None)

    def protocol(self) -> type[GuardedH11]:
        """uvicorn's `http` setting: the protocol class bound to this set of connections."""
        connections = self

        class Bound(GuardedH11):
            connections_of_server = connections

        return Bound


class GuardedH11(H11Protocol):
    """uvicorn's h11 protocol with a deadline per phase and admission through `connections_of_server`."""

    connections_of_server: ClassVar[Connections]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._phase: _Phase | None = None
        self._deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        if not self.connections_of_server.admit(self):
            transport.write(_REFUSED)
            transport.close()
            return
        self._follow()

    def connection_lost(self, exc: Exception | None) -> None:
        self.connections_of_server.forget(self)
        self._cancel()
        super().connection_lost(exc)

    def handle_events(self) -> None:
        super().handle_events()
        self._follow()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._follow()

    def drop(self) -> None:
        """Close this connection (it was waiting for a request head): a deadline passed, or room is needed."""
        self._cancel()
        if not self.transport.is_closing():
            self.transport.close()

    def _follow(self) -> None:
        """Move to the phase the h11 state says, starting that phase's deadline."""
        if self.transport.is_closing() or self not in self.connections_of_server.open:
            return
        cycle = self.cycle
        busy = cycle is not None and not cycle.response_complete
        if busy and self.conn.their_state is h11.SEND_BODY:
            phase = _Phase.BODY
        else:
            phase = _Phase.BUSY if busy else _Phase.WAITING
        if phase is self._phase:
            return
        self._phase = phase
        self._cancel()
        waiting = self.connections_of_server.waiting
        waiting.pop(self, None)
        if phase is _Phase.WAITING:
            waiting[self] = None
            self._deadline = self.loop.call_later(HEADER_TIMEOUT, self._expire)
        elif phase is _Phase.BODY:
            self._deadline = self.loop.call_later(BODY_TIMEOUT, self._expire)

    def _expire(self) -> None:
        self._deadline = None
        self.connections_of_server.forget(self)
        self.drop()

    def _cancel(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None
