"""Raw JSON-RPC over the server's stdio: a request whose id is readable but whose envelope is invalid is answered
with a JSON-RPC error carrying that id, instead of leaving the client to wait out its timeout."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest
from anyio.abc import Process
from anyio.streams.buffered import BufferedByteReceiveStream

from tests.harness import Relay
from tests.transports.raw_stdio import stop

pytestmark = pytest.mark.anyio

INIT = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}},
}


class Wire:
    def __init__(self, process: Process) -> None:
        assert process.stdin is not None and process.stdout is not None
        self.process = process
        self._out = BufferedByteReceiveStream(process.stdout)

    async def send(self, line: str) -> None:
        assert self.process.stdin is not None
        await self.process.stdin.send(line.encode("utf-8") + b"\n")

    async def reply(self) -> dict[str, Any]:
        with anyio.fail_after(20):
            while True:
                message: dict[str, Any] = json.loads(await self._out.receive_until(b"\n", 1 << 24))
                if "id" in message:  # skip notifications
                    return message


@asynccontextmanager
async def raw_server(relay: Relay) -> AsyncIterator[Wire]:
    process = await anyio.open_process(
        [sys.executable, "-m", "gemini_relay"],
        env=relay.env,
        cwd=relay.project,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        wire = Wire(process)
        await wire.send(json.dumps(INIT))
        assert (await wire.reply())["id"] == 0
        await wire.send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        yield wire
    finally:
        await stop(process)


def nested(levels: int) -> str:
    return "[" * levels + "]" * levels


def call_with_schema(request_id: int, levels: int) -> str:
    schema = '{"type":"object","properties":{"a":' + nested(levels) + "}}"
    return (
        f'{{"jsonrpc":"2.0","id":{request_id},"method":"tools/call",'
        f'"params":{{"name":"gemini-ask","arguments":{{"prompt":"p","jsonSchema":{schema}}}}}}}'
    )


async def test_invalid_envelopes_with_a_readable_id_get_an_error_with_that_id_and_the_server_keeps_serving(
    relay: Relay,
) -> None:
    cases = [
        ('{"jsonrpc":"2.0","id":5,"method":3}', 5, -32600),
        ('{"jsonrpc":"1.0","id":"x","method":"tools/list"}', "x", -32600),
        (call_with_schema(7, 300), 7, -32600),  # past the SDK parser's nesting limit
        (call_with_schema(8, 5000), 8, -32600),  # past Python's too
        ('{"jsonrpc":"2.0","id":9,"method":"tools/list"', 9, -32700),  # cut short
    ]
    async with raw_server(relay) as wire:
        for line, request_id, code in cases:
            await wire.send(line)
            answer = await wire.reply()
            assert answer["id"] == request_id, answer
            assert answer["error"]["code"] == code, answer
        await wire.send('{"jsonrpc":"2.0","id":10,"method":"tools/list"}')
        listing = await wire.reply()
    assert listing["id"] == 10 and listing["result"]["tools"]
    assert relay.api.requests == []


async def test_a_schema_nested_within_the_parser_limit_is_a_clean_json_schema_error(relay: Relay) -> None:
    async with raw_server(relay) as wire:
        await wire.send(call_with_schema(3, 150))
        answer = await wire.reply()
    text = answer["result"]["content"][0]["text"]
    assert answer["result"]["isError"] and text == "Error executing gemini-ask: jsonSchema nests deeper than 64 levels"
