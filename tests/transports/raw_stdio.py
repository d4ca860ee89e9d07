"""The server over its own stdin and stdout as raw bytes: each line is followed by a ping, and what came back before
that ping's answer is the line's answer (none: the line was dropped). A line that kills the server shows as the
ping never answered.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import Process
from anyio.streams.buffered import BufferedByteReceiveStream

REPLY_BOUND = 30.0  # a loaded 2-core machine; a live server answers a ping in milliseconds
HELLO = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}
INIT = json.dumps({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": HELLO}).encode()
INITIALIZED = b'{"jsonrpc":"2.0","method":"notifications/initialized"}'


@dataclass
class Conversation:
    answers: list[list[dict[str, Any]]] = field(default_factory=list)  # per line sent, the replies it got
    raw: list[bytes] = field(default_factory=list)  # every line the server wrote, as bytes
    died_after: int | None = None  # the index of the line after which the server stopped answering
    exit_code: int | None = None


def ping(tag: str) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": f"ping-{tag}", "method": "ping"}).encode()


async def converse(
    env: dict[str, str], cwd: Path, stderr: Path, lines: Sequence[bytes], *, burst: Sequence[bytes] = (INIT,)
) -> Conversation:
    """`burst` goes out in one write at the start (it reaches the stdio front while the SDK loads); its requests'
    answers are answers[0]. Then each of `lines`, with a ping after it."""
    talk = Conversation()
    with stderr.open("ab") as errlog:
        process = await anyio.open_process(
            [sys.executable, "-m", "gemini_relay"], env=env, cwd=cwd, stderr=errlog, start_new_session=True
        )
        try:
            wire = _Wire(process, talk)
            await wire.send(b"\n".join([*burst, ping("burst")]) + b"\n")
            talk.answers.append(await wire.until("ping-burst"))
            await wire.send(INITIALIZED + b"\n")
            for index, line in enumerate(lines):
                await wire.send(line + b"\n" + ping(str(index)) + b"\n")
                try:
                    talk.answers.append(await wire.until(f"ping-{index}"))
                except (TimeoutError, anyio.EndOfStream, anyio.IncompleteRead):
                    talk.died_after = index
                    break
        finally:
            await stop(process)
            talk.exit_code = process.returncode
    return talk


class _Wire:
    def __init__(self, process: Process, talk: Conversation) -> None:
        assert process.stdout is not None
        self._process = process
        self._out = BufferedByteReceiveStream(process.stdout)
        self._talk = talk

    async def send(self, data: bytes) -> None:
        assert self._process.stdin is not None
        await self._process.stdin.send(data)

    async def until(self, ping_id: str) -> list[dict[str, Any]]:
        """The replies before the ping `ping_id` is answered (notifications skipped)."""
        got: list[dict[str, Any]] = []
        with anyio.fail_after(REPLY_BOUND):
            while True:
                line = await self._out.receive_until(b"\n", 1 << 26)
                self._talk.raw.append(line)
                message = strict_json(line)
                if message.get("id") == ping_id:
                    return got
                if "id" in message:
                    got.append(message)


def strict_json(data: bytes) -> dict[str, Any]:
    """What the server wrote, parsed as JSON proper: NaN or Infinity in it fails the test."""

    def refuse(constant: str) -> None:
        raise AssertionError(f"the server wrote {constant}, which is not JSON: {data[:200]!r}")

    value = json.loads(data, parse_constant=refuse)
    assert isinstance(value, dict), data[:200]
    return value


async def stop(process: Process) -> None:
    """Close stdin and wait (bounded) for the server to exit; SIGKILL its group if it does not."""
    if process.stdin is not None:
        await process.stdin.aclose()
    with anyio.move_on_after(15):
        await process.wait()
    if process.returncode is None:
        os.killpg(process.pid, signal.SIGKILL)
        await process.wait()
    # Its pipes too: left to the garbage collector, they warned (unclosed transport) in whatever test ran next.
    with anyio.CancelScope(shield=True):
        await process.aclose()
