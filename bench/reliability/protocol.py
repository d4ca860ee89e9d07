"""bad input, protocol: malformed JSON-RPC lines, a 50 MB message, messages split across reads, over raw stdio.

After each abuse a ping must answer within a bound: the server is still serving. A line after which the server
has exited crashed it (a 5,000-digit id did, until the lines were vetted: transports/rpc_lines.py).
"""

from __future__ import annotations

import json
import sys
from typing import Any

import anyio
from anyio.abc import ByteReceiveStream, Process

from bench.kill9 import World
from bench.reliability.table import Figure, at_least, zero
from bench.reliability.world import left_running, world

CATEGORY = "bad input"
PING_BOUND = 30.0
MALFORMED: list[bytes] = [
    b"{", b"not json", b"[]", b"[1,2]", b"{}", b"null", b"42", b'"str"', b'{"jsonrpc":"2.0"}',
    b'{"jsonrpc":"2.0","id":1}', b'{"jsonrpc":"1.0","id":2,"method":"ping"}', b'{"jsonrpc":"2.0","id":{},"method":"x"}',
    b'{"jsonrpc":"2.0","id":3,"method":"tools/call"}', b'{"jsonrpc":"2.0","id":4,"method":"tools/call","params":[]}',
    b'{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":42}}',
    b'{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"nope","arguments":{}}}',
    b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"gemini-ping","arguments":"x"}}',
    b'{"jsonrpc":"2.0","id":8,"method":"no/such/method"}', b'{"jsonrpc":"2.0","id":1e400,"method":"ping"}',
    b'{"jsonrpc":"2.0","id":9,"result":{}}', b'{"jsonrpc":"2.0","id":10,"error":{"code":1,"message":"x"}}',
    b"\xff\xfe\x00garbage", b"\x00" * 64, b'{"jsonrpc":"2.0","id":11,"method":"ping"' + b"]" * 10,
    b"[" * 100_000 + b"]" * 100_000, b'{"a":' * 5000 + b"1" + b"}" * 5000, b"", b" \t ",
    b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"nope"}}',
    b'{"jsonrpc":"2.0","id":12,"method":"resources/read","params":{"uri":"file:///etc/passwd"}}',
    b'{"jsonrpc":"2.0","id":13,"method":"prompts/get","params":{"name":"gemini-ask","arguments":{"prompt":1}}}',
    b'{"jsonrpc":"2.0","id":' + b"9" * 5000 + b',"method":"ping"}', b'{"jsonrpc":"2.0","id":NaN,"method":"ping"}',
    b'\xef\xbb\xbf{"jsonrpc":"2.0","id":14,"method":"ping"}', b'{"jsonrpc":"2.0","id":-Infinity,"method":"ping"}',
    b'{"jsonrpc":"2.0","id":1.5,"method":"ping"}', b'{"jsonrpc":"2.0","id":true,"method":"ping"}',
    b'{"jsonrpc":"2.0","id":null,"method":"ping"}', b'{"jsonrpc":"2.0","id":"\\ud800","method":"ping"}',
    b'{"jsonrpc":"2.0","id":15,"method":"ping","params":{"x":"\xff"}}',
    b'{"jsonrpc":"2.0","id":16,"method":"tools/list","params":[1]}', b'{"jsonrpc":"2.0","method":5}',
]  # fmt: skip
HELLO = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "abuse", "version": "1"}}
INIT = {"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": HELLO}


class Raw:
    """The server over its own stdin/stdout: lines in, replies collected by id."""

    def __init__(self, proc: Process) -> None:
        self.proc = proc
        self.replies: dict[Any, dict[str, Any]] = {}
        self.event = anyio.Event()

    async def read(self, stdout: ByteReceiveStream) -> None:
        buffer = b""
        async for chunk in stdout:
            buffer += chunk
            *lines, buffer = buffer.split(b"\n")
            for line in lines:
                try:
                    message = json.loads(line)
                except ValueError:
                    continue
                if isinstance(message, dict) and "id" in message:
                    self.replies[message["id"]] = message
                    self.event.set()
                    self.event = anyio.Event()

    async def send(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        await self.proc.stdin.send(data)

    async def reply(self, rid: Any, bound: float = PING_BOUND) -> dict[str, Any] | None:
        with anyio.move_on_after(bound):
            while rid not in self.replies:
                await self.event.wait()
        return self.replies.get(rid)


async def abuse(w: World, short: bool) -> tuple[int, list[str], list[str], list[str]]:
    env = {**w.relay.env}
    stderr = w.relay.stderr_path.open("ab")
    attacks: list[tuple[str, list[bytes]]] = [(f"malformed line {line[:40]!r}", [line + b"\n"]) for line in MALFORMED]
    size = 5 if short else 50
    big = json.dumps({"jsonrpc": "2.0", "id": "big", "method": "ping", "params": {"pad": "x" * (size << 20)}})
    attacks.append((f"a {size} MB message", [big.encode() + b"\n"]))
    ping = b'{"jsonrpc":"2.0","id":"split","method":"ping"}\n'
    attacks.append(("a ping split into 1-byte reads", [ping[i : i + 1] for i in range(len(ping))]))
    two = b'{"jsonrpc":"2.0","id":"a","method":"ping"}\n{"jsonrpc":"2.0","id":"b","method":"ping"}\n'
    attacks.append(("two messages in one read, cut mid-message", [two[:60], two[60:]]))
    dead: list[str] = []
    unanswered: list[str] = []
    crashed: list[str] = []
    async with await anyio.open_process([sys.executable, "-m", "gemini_relay"], env=env, cwd=str(w.relay.project),
                                        stderr=stderr, start_new_session=True) as proc:  # fmt: skip
        raw = Raw(proc)
        async with anyio.create_task_group() as tg:
            assert proc.stdout is not None
            tg.start_soon(raw.read, proc.stdout)
            await raw.send(json.dumps(INIT).encode() + b"\n")
            if await raw.reply("init", 60) is None:
                raise RuntimeError("the server did not answer initialize")
            await raw.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
            for n, (what, pieces) in enumerate(attacks):
                for piece in pieces:
                    await raw.send(piece)
                    await anyio.sleep(0)  # let each piece be its own read
                if what.startswith("two messages") and (await raw.reply("a") is None or await raw.reply("b") is None):
                    unanswered.append(what)
                if what.startswith("a ping split") and await raw.reply("split") is None:
                    unanswered.append(what)
                await raw.send(json.dumps({"jsonrpc": "2.0", "id": f"ping{n}", "method": "ping"}).encode() + b"\n")
                if await raw.reply(f"ping{n}") is None:
                    with anyio.move_on_after(5):
                        await proc.wait()
                    dead.append(f"after {what}: no ping answer within {PING_BOUND:g}s (exit {proc.returncode})")
                    if proc.returncode is not None:
                        crashed.append(f"{what}: the server exited {proc.returncode}")
                    break
            tg.cancel_scope.cancel()
        assert proc.stdin is not None
        await proc.stdin.aclose()
        with anyio.move_on_after(15):
            await proc.wait()
        if proc.returncode is None:
            proc.kill()
    stderr.close()
    return len(attacks), dead, unanswered, crashed


async def attack(short: bool) -> list[Figure]:
    with world("protocol") as w:
        count, dead, unanswered, crashed = await abuse(w, short)
        left = await left_running(w)
    return [
        at_least(CATEGORY, "protocol abuses (malformed JSON-RPC, big, split)", count, len(MALFORMED) + 3),
        zero(CATEGORY, "abuses after which a ping went unanswered", dead + unanswered),
        zero(CATEGORY, "stdio lines that crash the server", crashed),
        zero(CATEGORY, "processes left (protocol)", left),
    ]
