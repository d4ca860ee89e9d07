"""A quick start for stdio: `initialize` and `tools/list` answered at once, from the SDK's own answers shipped with
the package (front_answers.py), while the MCP SDK imports (it takes ~0.3-0.4 s of the ~0.5-1.5 s a server needs
before it can answer anything). A first start answers as fast as any other: clients that send their first model
request without waiting for the server (Codex `exec`, ~1.4 s after spawning it) see the tools on that turn.

The answer is picked by the surface the settings give (toolsets, test tools) and the protocol version the SDK would
negotiate; initialize params the front cannot vouch for go to the SDK. The front answers only while nothing else
has been asked: the first request that is not an `initialize` or a plain `tools/list` goes to the SDK, and so does
every line after it, in order. The SDK still sees `initialize` (its answer is not sent twice). That the shipped
answers are the SDK's is a test's to prove (tests/transports/test_front_answers.py), never a user's log line; a
start whose configuration has a problem is left to the SDK (cli.py, FrontAnswers.backend), whose first answer says it.

This module imports nothing heavy: it runs before the SDK is imported.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import select
import threading
from collections.abc import Callable
from typing import Any

from gemini_relay.log import logger, requests_log, shown
from gemini_relay.transports.front_answers import FrontAnswers, surface_key, usable_state_dir
from gemini_relay.transports.rpc_lines import Refusal, id_of, vet

INSPECT_MAX = 64 * 1024  # bytes: a request line longer than this is only forwarded
_EOF = b""


class StdioFront:
    """Owns the stdio wire from the start: fd 0 and 1 are diverted (children read EOF, stray output goes to
    stderr) and served from private duplicates, as the SDK's stdio_server does."""

    def __init__(self, answers: FrontAnswers | None, surface: str) -> None:
        self._answers = answers
        self._surface = surface
        self._in = os.fdopen(_private_dup(0), "rb", closefd=False)
        self.out = os.fdopen(_private_dup(1), "wb", closefd=False)
        self._out_lock = threading.Lock()  # the front's refusals and the SDK's answers come from different threads
        _divert(0, os.open(os.devnull, os.O_RDONLY))
        _divert(1, os.dup(2))
        self._lines: queue.Queue[bytes] = queue.Queue()
        self.pending: list[bytes] = []  # lines for the SDK, in order, read while the front served
        self._open = True  # still answering: nothing but initialize and tools/list has been asked
        self._answered_init: Any = None  # the initialize id the front answered (the SDK's answer is dropped)
        self._init_pending = False  # the SDK's answer to that initialize is still to be dropped
        self._sent_tools: dict[str, Any] | None = None
        self.answered: list[str] = []  # what the front answered itself, in order
        self._waiter: Callable[[], object] | None = None  # wakes next_line waiting for a line (from any thread)
        self._waiter_lock = threading.Lock()
        threading.Thread(target=self._read, name="stdio-front-reader", daemon=True).start()

    # --- before the SDK: the main thread answers while another imports ---------------------------------------------

    def serve_until_ready(self) -> None:
        """Answer what the shipped answers cover until `ready()` is called (from the importing thread)."""
        while True:
            line = self._lines.get()
            if line is _READY:
                self._report()
                return
            if not self._open or not self._answer(line):
                self.pending.append(line)  # stdin's EOF too: the SDK sees it after what came before

    def _report(self) -> None:
        if self.answered:
            logger.info("Answered %s from the shipped answers while the SDK loaded", " and ".join(self.answered))

    def ready(self) -> None:
        self._lines.put(_READY)

    def _answer(self, line: bytes) -> bool:
        """True when the front answered `line` (it may still be forwarded, see pending); False: the SDK's, which
        answers whatever is wrong with it (a line the front cannot take closes the front, never the server)."""
        message = _parse(line)
        method = message.get("method") if message is not None else None
        if message is None or not isinstance(method, str) or ("id" in message and id_of(message) is None):
            self._open = False
            return False
        if "id" not in message:  # a notification (notifications/initialized): the SDK's, and the front stays open
            return False
        request_id = message["id"]
        if method == "initialize" and self._answered_init is None:
            found = self._answers.for_initialize(self._surface, message.get("params")) if self._answers else None
            if found is None:
                self._open = False
                return False
            initialize, self._sent_tools = found
            self._write({"jsonrpc": "2.0", "id": request_id, "result": initialize})
            self.answered.append("initialize")
            self._answered_init = request_id
            self._init_pending = True
            self.pending.append(line)  # the SDK's session must be initialized too
            return True
        if method == "tools/list" and self._sent_tools is not None and _first_page(message):
            self._write({"jsonrpc": "2.0", "id": request_id, "result": self._sent_tools})
            self.answered.append("tools/list")
            return True
        self._open = False
        return False

    def _write(self, message: dict[str, Any]) -> None:
        self.write_line(json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n")

    def write_line(self, data: bytes) -> None:
        with self._out_lock:
            self.out.write(data)
            self.out.flush()

    def write_now(self, data: bytes) -> bool:
        """Write `data` from the calling (event loop) thread when that cannot block: a line of at most PIPE_BUF
        bytes to a wire with room for it, the lock free. False: nothing written, a worker thread must (a reader
        that stopped reading must never stall the loop). Saves a thread hand-off on most replies."""
        if len(data) > select.PIPE_BUF or not self._out_lock.acquire(blocking=False):
            return False
        try:
            try:
                _, writable, _ = select.select([], [self.out], [], 0)
            except (OSError, ValueError):
                return False
            if not writable:
                return False
            self.out.write(data)
            self.out.flush()
            return True
        finally:
            self._out_lock.release()

    def _read(self) -> None:
        for line in self._in:
            self._lines.put(line)
            self._wake()
        self._lines.put(_EOF)
        self._wake()

    def _wake(self) -> None:
        """Wake the event loop waiting in next_line, if one is (from this reader thread)."""
        with self._waiter_lock:
            waiter, self._waiter = self._waiter, None
        if waiter is not None:
            with contextlib.suppress(RuntimeError):  # its loop has ended (the server is exiting)
                waiter()

    # --- the SDK's stdin and stdout (stdio_server's explicit streams) ------------------------------------------------

    def sdk_stdin(self) -> FrontStdin:
        return FrontStdin(self)

    def sdk_stdout(self) -> FrontStdout:
        return FrontStdout(self)

    def outgoing(self, text: str) -> bool:
        """False for the SDK's answer to the initialize the front already answered (not sent twice)."""
        if not self._init_pending:
            return True
        message = _parse(text.encode("utf-8"), limit=None)
        if message is None or "method" in message or message.get("id") != self._answered_init:
            return True
        self._init_pending = False
        return False

    async def next_line(self) -> bytes:
        if self.pending:
            return self.pending.pop(0)
        import anyio
        import anyio.lowlevel

        while True:
            try:
                line = self._lines.get_nowait()
            except queue.Empty:
                # The reader thread wakes this loop itself when a line comes (_wake): no worker thread sits between
                # a request and its handler, and none is left waiting on stdin at shutdown.
                arrived = anyio.Event()
                with self._waiter_lock:
                    self._waiter = _waker(arrived)
                try:
                    if self._lines.empty():  # a line queued before the waiter was set woke nobody
                        await arrived.wait()
                finally:
                    with self._waiter_lock:
                        self._waiter = None
                continue
            if line is not _READY:
                return line


class FrontStdin:
    """`async for line in stdin` for the SDK's stdio_server: the front's pending lines, then the rest of stdin."""

    def __init__(self, front: StdioFront) -> None:
        self._front = front

    def __aiter__(self) -> FrontStdin:
        return self

    async def __anext__(self) -> str:
        """The next line for the SDK; a blank line is skipped, and a line the SDK would misread is answered here
        (rpc_lines): the SDK never sees it."""
        while True:
            line = await self._front.next_line()
            if line == _EOF:
                raise StopAsyncIteration
            if not line.strip():
                continue
            verdict = vet(line, parse_limit=INSPECT_MAX)
            if isinstance(verdict, str):
                return verdict
            await self._refuse(verdict)

    async def _refuse(self, refusal: Refusal) -> None:
        import anyio.to_thread

        requests_log.info(
            "Answered an invalid JSON-RPC line (id %s) with error %d: %s",
            shown(refusal.request_id), refusal.code, shown(refusal.message),
        )  # fmt: skip
        await anyio.to_thread.run_sync(self._front.write_line, refusal.wire())


class FrontStdout:
    """The SDK's stdout: each flushed line goes to the wire, except the front's duplicates."""

    def __init__(self, front: StdioFront) -> None:
        self._front = front
        self._buffer: list[str] = []

    async def write(self, text: str) -> None:
        self._buffer.append(text)

    async def flush(self) -> None:
        import anyio.to_thread

        text, self._buffer = "".join(self._buffer), []
        if not text or not self._front.outgoing(text):
            return
        data = text.encode("utf-8")
        if not self._front.write_now(data):
            await anyio.to_thread.run_sync(self._front.write_line, data)


_READY = b"\0ready"  # a marker object in the line queue (compared by identity)


def _waker(arrived: Any) -> Callable[[], object]:
    """Sets the anyio Event `arrived` from another thread. On asyncio without waiting for the loop to have done it:
    a reader thread that waits for the loop then wants the GIL back just as the loop starts on the request."""
    import asyncio  # loaded by now: the loop runs

    import anyio.from_thread
    import anyio.lowlevel

    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:  # another anyio backend
        token = anyio.lowlevel.current_token()
        return lambda: anyio.from_thread.run_sync(arrived.set, token=token)
    return lambda: loop.call_soon_threadsafe(arrived.set)


def _parse(line: bytes, limit: int | None = INSPECT_MAX) -> dict[str, Any] | None:
    """A request line longer than `limit` is never an initialize or a tools/list: not parsed twice. (Answers, which
    may be long, are parsed with no limit.)"""
    if limit is not None and len(line) > limit:
        return None
    try:
        data = json.loads(line)
    except (ValueError, RecursionError):  # a deeply nested line is the SDK's to refuse, never a crash here
        return None
    return data if isinstance(data, dict) else None  # pyright: ignore[reportUnknownVariableType]


def _first_page(message: dict[str, Any]) -> bool:
    """A tools/list without a cursor (params that are not an object are the SDK's to refuse)."""
    params = message.get("params")
    return params is None or (isinstance(params, dict) and not params.get("cursor"))  # pyright: ignore[reportUnknownMemberType]


def _private_dup(fd: int) -> int:
    import fcntl

    return fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)


def _divert(fd: int, replacement: int) -> None:
    try:
        os.dup2(replacement, fd)
    finally:
        os.close(replacement)


__all__ = ["FrontAnswers", "StdioFront", "surface_key", "usable_state_dir"]  # the entry point's names, from one place
