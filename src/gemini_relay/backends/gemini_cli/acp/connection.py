"""One `gemini --acp` child: JSON-RPC 2.0 over NDJSON stdio, with session updates routed per session.

The child runs in its own process group with an allowlisted env; it exits by itself when its stdin closes, so a
relay that dies leaves nothing behind. Everything the child sends is read by one task and routed: responses to their
waiting request, `session/update` notifications and `session/request_permission` requests to the listener of their
session (unbounded buffers, so a slow consumer never stalls the other sessions), anything else is refused.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import subprocess
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import Process, TaskGroup
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from gemini_relay.backends.gemini_cli.acp.wire import (
    AcpConnectionLost,
    AcpHandshakeError,
    AcpRpcError,
    Inbound,
    describe_exit,
    rpc_error,
)
from gemini_relay.log import logger
from gemini_relay.streams.framing import LineFramer
from gemini_relay.supervise.groups import open_pidfd
from gemini_relay.supervise.process import DEFAULT_GRACE, stop_group

__all__ = ["AcpConnection", "AcpConnectionLost", "AcpHandshakeError", "AcpRpcError", "Inbound", "open_connection"]

PROTOCOL_VERSION = 1
HANDSHAKE_TIMEOUT = 60.0  # a cold CLI boots in ~0.8 s here; a real install with extensions can take far longer
REQUEST_TIMEOUT = 60.0  # session/new and session/load initialise a whole CLI config
EOF_EXIT_WAIT = 2.0  # the CLI exits ~20 ms after its stdin closes; past this it gets SIGTERM
STDERR_TAIL_CHARS = 4000
READ_SIZE = 65536


@dataclass
class _Pending:
    done: anyio.Event = field(default_factory=anyio.Event)
    result: dict[str, Any] | None = None
    error: BaseException | None = None
    route_to: str | None = None  # a prompt: the response goes to this session's listener instead


class AcpConnection:
    """A live, initialised `gemini --acp` child. Open one with `open_connection`."""

    def __init__(self, process: Process, *, grace: float) -> None:
        self._process = process
        self._grace = grace
        self._next_id = 0
        self._pending: dict[int, _Pending] = {}
        self._listeners: dict[str, MemoryObjectSendStream[Inbound]] = {}
        self._send_lock = anyio.Lock()
        self._closing = anyio.Event()
        self._lost: str | None = None
        self._stderr_tail = ""
        self._tg: TaskGroup | None = None
        self.agent_info: dict[str, Any] = {}
        self.capabilities: dict[str, Any] = {}

    @property
    def pid(self) -> int:
        return self._process.pid

    @property
    def alive(self) -> bool:
        return self._lost is None and not self._closing.is_set()

    @property
    def lost(self) -> str | None:
        """Why the child is gone, or None while it runs."""
        return self._lost

    @property
    def stderr_tail(self) -> str:
        return self._stderr_tail

    @property
    def can_load(self) -> bool:
        return bool(self.capabilities.get("loadSession"))

    def close_soon(self) -> None:
        """Ask the owner of this connection to stop the child."""
        self._closing.set()

    async def wait_closing(self) -> None:
        await self._closing.wait()

    # -- requests ---------------------------------------------------------------------------------------------

    async def request(self, method: str, params: dict[str, Any], timeout: float = REQUEST_TIMEOUT) -> dict[str, Any]:
        """Send a request and wait for its result.

        Raises:
            AcpRpcError: the agent answered with an error.
            AcpConnectionLost: the child is gone.
            TimeoutError: no answer within `timeout`.
        """
        request_id, pending = self._register()
        try:
            await self._send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
            with anyio.fail_after(timeout):
                await pending.done.wait()
        finally:
            self._pending.pop(request_id, None)
        if pending.error is not None:
            raise pending.error
        return pending.result or {}

    async def send_prompt(self, session_id: str, blocks: Sequence[dict[str, Any]]) -> None:
        """Start `session/prompt`; its response arrives at the session's listener as a `response` item."""
        request_id, pending = self._register()
        pending.route_to = session_id
        params = {"sessionId": session_id, "prompt": list(blocks)}
        await self._send({"jsonrpc": "2.0", "id": request_id, "method": "session/prompt", "params": params})

    async def notify(self, method: str, params: dict[str, Any]) -> None:
        await self._send({"jsonrpc": "2.0", "method": method, "params": params})

    async def respond(self, request_id: int | str | None, result: dict[str, Any]) -> None:
        await self._send({"jsonrpc": "2.0", "id": request_id, "result": result})

    @asynccontextmanager
    async def listen(self, session_id: str) -> AsyncIterator[MemoryObjectReceiveStream[Inbound]]:
        """Receive this session's updates, permission requests and prompt response while the block runs."""
        send, receive = anyio.create_memory_object_stream[Inbound](math.inf)
        self._listeners[session_id] = send
        if self._lost is not None:
            send.send_nowait(Inbound("closed", {"reason": self._lost}))
        try:
            yield receive
        finally:
            if self._listeners.get(session_id) is send:
                del self._listeners[session_id]
            send.close()
            receive.close()

    def _register(self) -> tuple[int, _Pending]:
        if self._lost is not None:
            raise AcpConnectionLost(self._lost)
        self._next_id += 1
        pending = _Pending()
        self._pending[self._next_id] = pending
        return self._next_id, pending

    async def _send(self, message: dict[str, Any]) -> None:
        stdin = self._process.stdin
        if self._lost is not None or stdin is None:
            raise AcpConnectionLost(self._lost or "the child's stdin is closed")
        data = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"
        async with self._send_lock:
            try:
                await stdin.send(data)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as exc:
                raise AcpConnectionLost(self._lost or "the child stopped reading its stdin") from exc

    # -- the reader -------------------------------------------------------------------------------------------

    async def _read_stdout(self) -> None:
        stdout = self._process.stdout
        assert stdout is not None
        framer = LineFramer()
        eof = False
        try:
            while True:
                try:
                    chunk = await stdout.receive(READ_SIZE)
                except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
                    eof = True
                    break
                for line in framer.push(chunk):
                    self._dispatch_line(line)
        finally:
            if eof:
                # The exit status names the cause (a signal, a crash); it follows EOF by a moment.
                with anyio.CancelScope(shield=True), anyio.move_on_after(EOF_EXIT_WAIT):
                    await _wait_exit(self._process)
                self._mark_lost(describe_exit(self._process.returncode))
            else:
                self._mark_lost("gemini --acp was stopped")

    async def _read_stderr(self) -> None:
        stderr = self._process.stderr
        assert stderr is not None
        # Kept for failure messages only: the CLI prints stack traces and request metadata here, never bodies.
        with contextlib.suppress(anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            while True:
                chunk = await stderr.receive(READ_SIZE)
                tail = self._stderr_tail + chunk.decode("utf-8", errors="replace")
                self._stderr_tail = tail[-STDERR_TAIL_CHARS:]

    def _dispatch_line(self, line: str) -> None:
        if not line.strip():
            return
        try:
            message = json.loads(line)
        except ValueError:
            logger.debug("gemini --acp: skipped a non-JSON stdout line")
            return
        if not isinstance(message, dict):
            return
        msg: dict[str, Any] = message  # pyright: ignore[reportUnknownVariableType]
        method = msg.get("method")
        params = msg.get("params") if isinstance(msg.get("params"), dict) else {}
        assert isinstance(params, dict)
        if isinstance(method, str):
            if "id" in msg:
                self._incoming_request(msg.get("id"), method, params)  # pyright: ignore[reportUnknownArgumentType]
            elif method == "session/update":
                self._route(params, Inbound("update", params))  # pyright: ignore[reportUnknownArgumentType]
            return
        request_id = msg.get("id")
        if not isinstance(request_id, int) or request_id not in self._pending:
            return
        pending = self._pending[request_id]
        error = msg.get("error")
        failure = rpc_error(error) if error is not None else None
        result = msg.get("result")
        result_dict: dict[str, Any] = result if isinstance(result, dict) else {}  # pyright: ignore[reportUnknownVariableType]
        if pending.route_to is not None:
            del self._pending[request_id]  # pyright: ignore[reportArgumentType]
            listener = self._listeners.get(pending.route_to)
            if listener is not None:
                listener.send_nowait(Inbound("response", result_dict, request_id, failure))
            return
        pending.result = result_dict
        pending.error = failure
        pending.done.set()

    def _incoming_request(self, request_id: int | str | None, method: str, params: dict[str, Any]) -> None:
        if method == "session/request_permission" and self._route(params, Inbound("permission", params, request_id)):
            return
        if method == "session/request_permission":
            reply: dict[str, Any] = {
                "jsonrpc": "2.0",
                "id": request_id,
                "result": {"outcome": {"outcome": "cancelled"}},
            }
        else:
            # No fs or terminal capability was declared; anything else is not ours to serve.
            reply = {
                "jsonrpc": "2.0",
                "id": request_id,
                "error": {"code": -32601, "message": f"{method} not supported"},
            }
        if self._tg is not None:
            self._tg.start_soon(self._send_quietly, reply)

    async def _send_quietly(self, message: dict[str, Any]) -> None:
        with contextlib.suppress(AcpConnectionLost):
            await self._send(message)

    def _route(self, params: dict[str, Any], item: Inbound) -> bool:
        session_id = params.get("sessionId")
        listener = self._listeners.get(session_id) if isinstance(session_id, str) else None
        if listener is None:
            return False
        listener.send_nowait(item)
        return True

    def _mark_lost(self, description: str) -> None:
        if self._lost is not None:
            return
        self._lost = description
        error = AcpConnectionLost(description)
        for pending in list(self._pending.values()):
            pending.error = error
            pending.done.set()
        for listener in list(self._listeners.values()):
            with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
                listener.send_nowait(Inbound("closed", {"reason": description}))
        self._closing.set()

    # -- handshake and shutdown -------------------------------------------------------------------------------

    async def _initialize(self, timeout: float) -> None:
        # No `fs` capability: with it the CLI proxies file access through the client and new-file writes fail
        # (gemini-cli.md §11.6); any object there, even {"readTextFile": false}, turns the proxy on.
        params: dict[str, Any] = {"protocolVersion": PROTOCOL_VERSION, "clientCapabilities": {}}
        try:
            result = await self.request("initialize", params, timeout=timeout)
        except TimeoutError:
            raise AcpHandshakeError(f"gemini --acp did not answer initialize within {timeout:g}s") from None
        except AcpConnectionLost as exc:
            raise AcpHandshakeError(f"gemini --acp exited before initialize ({exc.description}){_hint(self)}") from None
        except AcpRpcError as exc:
            raise AcpHandshakeError(f"gemini --acp refused initialize: {exc.message}") from None
        version = result.get("protocolVersion")
        if version != PROTOCOL_VERSION:
            raise AcpHandshakeError(f"gemini --acp speaks ACP protocol {version!r}, not {PROTOCOL_VERSION}")
        info, caps = result.get("agentInfo"), result.get("agentCapabilities")
        self.agent_info = info if isinstance(info, dict) else {}  # pyright: ignore[reportUnknownVariableType]
        self.capabilities = caps if isinstance(caps, dict) else {}  # pyright: ignore[reportUnknownVariableType]

    async def _stop(self) -> None:
        """Close stdin (the CLI exits on EOF), then SIGTERM the group, a bounded grace, then SIGKILL."""
        self._closing.set()
        stdin = self._process.stdin
        if stdin is not None:
            with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
                await stdin.aclose()
        with anyio.move_on_after(min(EOF_EXIT_WAIT, self._grace)):
            await _wait_exit(self._process)
        await stop_group(self._process.pid, self._grace)
        with anyio.move_on_after(EOF_EXIT_WAIT):
            await _wait_exit(self._process)
        for stream in (self._process.stdout, self._process.stderr):
            if stream is not None:
                with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
                    await stream.aclose()


@asynccontextmanager
async def open_connection(
    binary: str | Path,
    env: Mapping[str, str],
    cwd: Path,
    *,
    grace: float = DEFAULT_GRACE,
    handshake_timeout: float = HANDSHAKE_TIMEOUT,
    extra_args: Sequence[str] = (),
) -> AsyncIterator[AcpConnection]:
    """Start `gemini --acp`, complete `initialize`, yield the connection; on exit stop the whole process group.

    Raises:
        AcpHandshakeError: the binary cannot run or the handshake failed (the child is already stopped).
    """
    try:
        process = await anyio.open_process(
            [str(binary), "--acp", *extra_args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env=dict(env),
            start_new_session=True,
        )
    except OSError as exc:
        raise AcpHandshakeError(f"cannot execute {binary}: {exc.strerror or exc}") from exc
    connection = AcpConnection(process, grace=grace)
    logger.info("Started gemini --acp (pid %d)", process.pid)
    failed: AcpHandshakeError | None = None
    try:
        async with anyio.create_task_group() as tg:
            connection._tg = tg
            tg.start_soon(connection._read_stdout)
            tg.start_soon(connection._read_stderr)
            try:
                await connection._initialize(handshake_timeout)
            except AcpHandshakeError as exc:
                failed = exc  # raised below, outside the task group, so it is not wrapped in an ExceptionGroup
                tg.cancel_scope.cancel()
            else:
                try:
                    yield connection
                finally:
                    tg.cancel_scope.cancel()
        if failed is not None:
            raise failed
    finally:
        with anyio.CancelScope(shield=True):
            await connection._stop()
            logger.info("Stopped gemini --acp (pid %d)", process.pid)


async def _wait_exit(process: Process) -> None:
    fd = open_pidfd(process.pid)
    if fd is not None:
        try:
            await anyio.wait_readable(fd)
        except OSError:
            pass
        finally:
            os.close(fd)
    # The event loop's child watcher sets returncode a moment after the pidfd fires.
    while process.returncode is None:
        await anyio.sleep(0.005)


def _hint(connection: AcpConnection) -> str:
    lines = [ln.strip() for ln in connection.stderr_tail.splitlines() if ln.strip()]
    return f": {lines[-1][:300]}" if lines else ""
