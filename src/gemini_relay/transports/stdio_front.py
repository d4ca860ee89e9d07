"""A quick start for stdio: `initialize` and `tools/list` answered from this setup's last answers while the MCP SDK
imports (it takes ~0.3-0.4 s of the ~0.5 s a server needs before it can answer anything).

The answers are the SDK's own, recorded from an earlier start with the same build (by content: front_recording.py),
the same settings (GEMINI_*, GOOGLE_*, AGY_* and XDG_* variables, HOME, the working directory) and the same
initialize params. The front answers only while nothing else has been asked: the first request that is not a
recorded `initialize` or a plain `tools/list` goes to the SDK, and so does every line after it, in order. The SDK
still sees `initialize` (its answer to it is not sent twice) and it answers one `tools/list` of its own, so a
recording that went stale is replaced for the next start, even when the client hangs up at once (stdin's EOF waits
for those answers). Without a recording everything goes to the SDK, which records its answers.

This module imports nothing heavy: it runs before the SDK is imported.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import queue
import threading
from typing import TYPE_CHECKING, Any

from gemini_relay.log import logger, requests_log, shown
from gemini_relay.transports.front_recording import CACHE_NAME, FrontCache, setup_key
from gemini_relay.transports.rpc_lines import Refusal, id_of, vet

if TYPE_CHECKING:
    import anyio

WATCHED_LINES = 16  # lines the SDK side inspects for the answers to record; past these it only forwards
INSPECT_MAX = 64 * 1024  # bytes: a request line longer than this is only forwarded
READ_WAIT = 0.25  # seconds a worker waits for the next stdin line before it looks again
VERIFY_ID = "gemini-relay-front-verify"  # the SDK's own tools/list, compared with what the front answered
SETTLE_WAIT = 10.0  # seconds stdin's EOF is held back from the SDK while it answers what the front must check
_EOF = b""


def _request_key(setup: str, build: str, params: Any) -> str:
    return hashlib.sha256(json.dumps([setup, build, params], sort_keys=True).encode()).hexdigest()


class StdioFront:
    """Owns the stdio wire from the start: fd 0 and 1 are diverted (children read EOF, stray output goes to
    stderr) and served from private duplicates, as the SDK's stdio_server does."""

    def __init__(self, cache: FrontCache, setup: str) -> None:
        self._cache = cache
        self._setup = setup
        # Before the import thread starts: ~400 stats racing it for the GIL would cost far more than they take.
        self._build = cache.build()
        self._in = os.fdopen(_private_dup(0), "rb", closefd=False)
        self.out = os.fdopen(_private_dup(1), "wb", closefd=False)
        self._out_lock = threading.Lock()  # the front's refusals and the SDK's answers come from different threads
        _divert(0, os.open(os.devnull, os.O_RDONLY))
        _divert(1, os.dup(2))
        self._lines: queue.Queue[bytes] = queue.Queue()
        self.pending: list[bytes] = []  # lines for the SDK, in order, read while the front served
        self._open = True  # still answering: nothing but initialize and tools/list has been asked
        self._answered_init: Any = None  # the initialize id the front answered (the SDK's answer is dropped)
        self._drop: set[Any] = set()
        self._watch: dict[Any, str] = {}  # request id -> "initialize" | "tools": the SDK's answers to record
        self._recorded: dict[str, dict[str, Any]] = {}
        self._settled: anyio.Event | None = None  # set when the last watched answer has passed (see settle)
        self._key: str | None = None
        self._sent_tools: dict[str, Any] | None = None
        self._seen = 0
        self.answered: list[str] = []  # what the front answered itself, in order
        threading.Thread(target=self._read, name="stdio-front-reader", daemon=True).start()

    # --- before the SDK: the main thread answers while another imports ---------------------------------------------

    def serve_until_ready(self) -> None:
        """Answer what the recording covers until `ready()` is called (from the importing thread)."""
        while True:
            line = self._lines.get()
            if line is _READY:
                self._report()
                return
            if not self._open or not self._answer(line):
                self.pending.append(line)  # stdin's EOF too: the SDK sees it after what came before

    def _report(self) -> None:
        if self.answered:
            logger.info("Answered %s from the recorded answers while the SDK loaded", " and ".join(self.answered))

    def ready(self) -> None:
        self._lines.put(_READY)

    def _answer(self, line: bytes) -> bool:
        """True when the front answered `line` (it may still be forwarded, see pending); False: the SDK's, which
        answers whatever is wrong with it (a line the front cannot take closes the front, never the server)."""
        try:
            return self._answer_message(_parse(line), line)
        except (ValueError, RecursionError):  # params json.dumps cannot write back, say
            self._open = False
            return False

    def _answer_message(self, message: dict[str, Any] | None, line: bytes) -> bool:
        method = message.get("method") if message is not None else None
        if message is None or not isinstance(method, str) or ("id" in message and id_of(message) is None):
            self._open = False
            return False
        if "id" not in message:  # a notification (notifications/initialized): the SDK's, and the front stays open
            return False
        request_id = message["id"]
        if method == "initialize" and self._answered_init is None:
            self._key = _request_key(self._setup, self._build, message.get("params"))
            self._watch[request_id] = "initialize"
            entry = self._cache.load(self._key)
            if entry is None:
                self._open = False
                return False
            self._write({"jsonrpc": "2.0", "id": request_id, "result": entry["initialize"]})
            self.answered.append("initialize")
            self._answered_init = request_id
            self._drop.add(request_id)
            self._sent_tools = entry["tools"]
            self.pending.append(line)  # the SDK's session must be initialized too
            return True
        if method == "tools/list" and self._sent_tools is not None and _first_page(message):
            self._write({"jsonrpc": "2.0", "id": request_id, "result": self._sent_tools})
            self.answered.append("tools/list")
            verify = {"jsonrpc": "2.0", "id": VERIFY_ID, "method": "tools/list"}
            if VERIFY_ID not in self._watch:
                self._watch[VERIFY_ID] = "tools"
                self._drop.add(VERIFY_ID)
                self.pending.append(json.dumps(verify).encode() + b"\n")
            return True
        self._open = False
        return False

    def _write(self, message: dict[str, Any]) -> None:
        self.write_line(json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n")

    def write_line(self, data: bytes) -> None:
        with self._out_lock:
            self.out.write(data)
            self.out.flush()

    def _read(self) -> None:
        for line in self._in:
            self._lines.put(line)
        self._lines.put(_EOF)

    # --- the SDK's stdin and stdout (stdio_server's explicit streams) ------------------------------------------------

    def sdk_stdin(self) -> FrontStdin:
        return FrontStdin(self)

    def sdk_stdout(self) -> FrontStdout:
        return FrontStdout(self)

    def inspect_in(self, line: bytes) -> None:
        """Watch the SDK-bound initialize and tools/list requests (a cold start records their answers)."""
        if self._seen >= WATCHED_LINES:
            return
        self._seen += 1
        message = _parse(line)
        if message is None or id_of(message) is None or message["id"] == VERIFY_ID:
            return
        if message.get("method") == "initialize" and self._key is None:
            with contextlib.suppress(ValueError, RecursionError):  # unrecordable params: this start records nothing
                self._key = _request_key(self._setup, self._build, message.get("params"))
                self._watch[message["id"]] = "initialize"
        elif message.get("method") == "tools/list" and _first_page(message):
            self._watch.setdefault(message["id"], "tools")

    def outgoing(self, text: str) -> bool:
        """Record the answers watched for; False for an answer the front already gave (not sent twice)."""
        if not self._watch:
            return True
        message = _parse(text.encode("utf-8"), limit=None)
        request_id = message.get("id") if message is not None else None
        if message is None or request_id not in self._watch:
            return True
        kind = self._watch.pop(request_id)
        if not self._watch and self._settled is not None:
            self._settled.set()
        result = message.get("result")
        if isinstance(result, dict) and kind not in self._recorded:
            self._recorded[kind] = result  # pyright: ignore[reportArgumentType]
            self._save()
        if request_id in self._drop:
            self._drop.discard(request_id)
            return False
        return True

    def _save(self) -> None:
        initialize, tools = self._recorded.get("initialize"), self._recorded.get("tools")
        if self._key is None or initialize is None or tools is None:
            return
        if self._cache.record(self._key, initialize, tools):
            logger.warning("The recorded initialize / tools/list answers were stale; recorded the SDK's anew")

    async def settle(self) -> None:
        """Stdin closed: before the SDK sees it, let the SDK answer what the front records or checks. A client that
        hangs up right after a quick tools/list still gets a stale recording replaced for the next start."""
        if not self._watch:
            return
        import anyio

        self._settled = anyio.Event()
        with anyio.move_on_after(SETTLE_WAIT):
            await self._settled.wait()

    async def next_line(self) -> bytes:
        if self.pending:
            return self.pending.pop(0)
        import anyio.to_thread

        while True:
            try:
                line = self._lines.get_nowait()
            except queue.Empty:
                try:
                    # Bounded: a worker abandoned at shutdown (SIGTERM cancels the reader) must end by itself, or
                    # the interpreter would wait for it at exit forever.
                    line = await anyio.to_thread.run_sync(self._lines.get, True, READ_WAIT, abandon_on_cancel=True)
                except queue.Empty:
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
                await self._front.settle()
                raise StopAsyncIteration
            if not line.strip():
                continue
            verdict = vet(line, parse_limit=INSPECT_MAX)
            if isinstance(verdict, str):
                self._front.inspect_in(line)
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
        await anyio.to_thread.run_sync(self._front.write_line, text.encode("utf-8"))


_READY = b"\0ready"  # a marker object in the line queue (compared by identity)


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


__all__ = ["CACHE_NAME", "FrontCache", "StdioFront", "setup_key"]  # the entry point's names, from one place
