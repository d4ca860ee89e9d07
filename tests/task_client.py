"""A raw JSON-RPC client over the server's stdio, speaking either protocol generation, for the MCP tasks tests.

Raw, because the SDK client has no Tasks runtime any more and because the tests compare wire bytes.
`modern` (2026-07-28) sends the per-request `_meta` envelope, with or without the Tasks extension declared;
`legacy` (2025-11-25) does the initialize handshake.
"""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
from anyio.abc import Process
from anyio.streams.buffered import BufferedByteReceiveStream

from tests.harness import Relay
from tests.transports.raw_stdio import stop

EXTENSION = "io.modelcontextprotocol/tasks"
MODERN = "2026-07-28"
LEGACY = "2025-11-25"


class TaskClient:
    def __init__(
        self, process: Process, version: str, extension: bool = True, capabilities: dict[str, Any] | None = None
    ) -> None:
        assert process.stdin is not None and process.stdout is not None
        self.process = process
        self.version = version
        self.extension = extension
        self.capabilities = dict(capabilities or {})  # declared besides the extension (e.g. elicitation)
        self._out = BufferedByteReceiveStream(process.stdout)
        self._ids = itertools.count(1)
        self.lines: list[bytes] = []  # every response line, as received
        self.initialize: dict[str, Any] | None = None  # the legacy handshake's result
        self.notifications: list[dict[str, Any]] = []  # every notification, in arrival order

    def _meta(self, extension: bool | None = None) -> dict[str, Any]:
        if self.version != MODERN:
            return {}
        caps: dict[str, Any] = dict(self.capabilities)
        if self.extension if extension is None else extension:
            caps["extensions"] = {EXTENSION: {}}
        return {
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": MODERN,
                "io.modelcontextprotocol/clientInfo": {"name": "raw-tasks", "version": "1"},
                "io.modelcontextprotocol/clientCapabilities": caps,
            }
        }

    async def request(self, method: str, params: dict[str, Any], *, extension: bool | None = None) -> dict[str, Any]:
        """The whole response (`result` or `error`)."""
        request_id = next(self._ids)
        body = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": {**params, **self._meta(extension)}}
        assert self.process.stdin is not None
        await self.process.stdin.send(json.dumps(body).encode("utf-8") + b"\n")
        with anyio.fail_after(60):
            while True:
                line = await self._out.receive_until(b"\n", 1 << 24)
                message: dict[str, Any] = json.loads(line)
                if message.get("id") == request_id:
                    self.lines.append(line)
                    return message
                if "id" not in message:
                    self.notifications.append(message)

    async def result(self, method: str, params: dict[str, Any], **kw: Any) -> dict[str, Any]:
        reply = await self.request(method, params, **kw)
        assert "result" in reply, reply
        result: dict[str, Any] = reply["result"]
        return result

    async def call(self, name: str, arguments: dict[str, Any], **extra: Any) -> dict[str, Any]:
        return await self.result("tools/call", {"name": name, "arguments": arguments, **extra})

    async def get(self, task_id: str) -> dict[str, Any]:
        return await self.result("tasks/get", {"taskId": task_id})

    async def until_done(self, task_id: str, timeout: float = 60) -> dict[str, Any]:
        """tasks/get until the task is no longer working (bounded)."""
        with anyio.fail_after(timeout):
            while (task := await self.get(task_id))["status"] == "working":
                await anyio.sleep(0.1)
        return task


@asynccontextmanager
async def task_client(
    relay: Relay,
    version: str = MODERN,
    *,
    extension: bool = True,
    env: dict[str, str] | None = None,
    capabilities: dict[str, Any] | None = None,
) -> AsyncIterator[TaskClient]:
    process = await anyio.open_process(
        [sys.executable, "-m", "gemini_relay"],
        env={**relay.env, **(env or {})},
        cwd=relay.project,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        client = TaskClient(process, version, extension, capabilities)
        await handshake(client)
        yield client
    finally:
        await stop(process)  # stdin closed: the client is gone, the server detaches its jobs and exits


async def handshake(client: TaskClient) -> None:
    """The legacy generation's initialize handshake (the modern one has none: each request carries its `_meta`)."""
    if client.version == MODERN:
        return
    caps: dict[str, Any] = {"tasks": {"list": {}, "cancel": {}}}
    init = {"protocolVersion": client.version, "capabilities": caps, "clientInfo": {"name": "raw", "version": "1"}}
    client.initialize = await client.result("initialize", init)
    assert client.process.stdin is not None
    await client.process.stdin.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
