"""A guard for anyio's UNIX socket streams on asyncio (4.16, the newest): each read waits for readiness with
`loop.add_reader(sock, future.set_result, None)`. A read cancelled in the loop iteration whose poll found its socket
readable still gets that callback (the reader is removed only by a done-callback, which runs later), and set_result on
the cancelled future raises InvalidStateError out of the event loop. It happened when a server's attached run was
cancelled as the host's message arrived (anyio #1267 fixed the same race in aclose, not here). The waits here set
the result only while the future is pending; otherwise they are anyio's own.
"""

from __future__ import annotations

import asyncio
from typing import Any


def _set_unless_done(future: asyncio.Future[Any]) -> None:
    if not future.done():
        future.set_result(None)


def install() -> None:
    """Guard the raw-socket waits of anyio's asyncio backend (idempotent; a backend without them is left alone)."""
    try:
        from anyio._backends._asyncio import _RawSocketMixin  # noqa: PLC0415  # pyright: ignore[reportPrivateUsage]
    except ImportError:
        return
    mixin: Any = _RawSocketMixin
    if getattr(mixin, "_gemini_relay_guarded", False) or not hasattr(mixin, "_wait_until_readable"):
        return

    mixin._wait_until_readable = _waiter("_receive_future", "add_reader", "remove_reader")
    mixin._wait_until_writable = _waiter("_send_future", "add_writer", "remove_writer")
    mixin._gemini_relay_guarded = True


def _waiter(attribute: str, add: str, remove: str) -> Any:
    """anyio's wait for one direction of readiness, with the guarded callback."""

    def wait(self: Any, loop: asyncio.AbstractEventLoop) -> asyncio.Future[None]:
        def done(_future: object) -> None:
            delattr(self, attribute)
            getattr(loop, remove)(self._raw_socket)

        future: asyncio.Future[None] = asyncio.Future()
        setattr(self, attribute, future)
        getattr(loop, add)(self._raw_socket, _set_unless_done, future)
        future.add_done_callback(done)
        return future

    return wait
