"""The warm gemini backend measured through the MCP stdio server (GEMINI_RELAY_WARM=on), for bench_acp.

Each figure is timed at the client: a later gemini-ask, 4 concurrent asks on one connection, a 200 KB answer's
first chunk (the gemini-ask reply carries chunk 1), gemini-cancel -> the cancelled call's reply (the turn has been
cancelled in the CLI by then: the run's close waits for the prompt's `cancelled` answer), and the resident memory
of the server tree (the server and its one warm CLI).
"""

from __future__ import annotations

import os
import re
import sys
import time
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from gemini_relay.backends.gemini_cli.acp.sessions import group_rss
from tests.harness import host_serving

PACE = 0.2  # seconds between calls (not timed): calls arrive apart, as a client's do
# A 200 KB answer (196 KiB of numbered lines) in the emulator's SSE chunks: 16 KB events as ../shared/bench sends
# them (the figures), and 1 KB events, which cost the CLI ~200 updates more.
BIG = {"16 KB": "[[fake:big:196:16384]]", "1 KB": "[[fake:big:196:1024]]"}
BURST_PACE = 1.0  # seconds between bursts of 4 (not timed): the spares a burst used are made again meanwhile


def tree_rss(root: int) -> int:
    """Resident memory of `root` and every descendant (the warm CLI leads its own process group)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rpartition(")")[2].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(entry.name))
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        todo.extend(children.get(pid, []))
        total += _rss(pid)
    return total


def _rss(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def _server_pid(home: str) -> int:
    """The relay server: the python process whose env names this bench's CLI home."""
    marker = f"GEMINI_CLI_HOME={home}".encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        if b"gemini_relay" in cmdline and marker in environ.split(b"\0"):
            return int(entry.name)
    return 0


def _host_pid(server: int) -> int:
    """The relay host of the server's state dir (a server starts it detached: it is not the server's child)."""
    try:
        environ = Path(f"/proc/{server}/environ").read_bytes().split(b"\0")
    except OSError:
        return 0
    state = next((v.partition(b"=")[2] for v in environ if v.startswith(b"GEMINI_RELAY_STATE_DIR=")), None)
    return (host_serving(state.decode()) if state is not None else None) or 0


async def _ask(client: Client, prompt: str, conversation: str | None = None) -> float:
    start = time.perf_counter()
    args = {"prompt": prompt} | ({"conversationId": conversation} if conversation else {})
    result = await client.call_tool("gemini-ask", args)
    if result.is_error:
        raise RuntimeError(f"gemini-ask failed: {result.content}")
    return time.perf_counter() - start


async def _conversation(client: Client) -> str:
    """A conversation id, from the `🧵 conversationId: <id>` line of a reply."""
    result = await client.call_tool("gemini-ask", {"prompt": "start a conversation"})
    text = "".join(getattr(block, "text", "") for block in result.content)
    match = re.search(r"conversationId: ([A-Za-z0-9_-]+)", text)
    if match is None:
        raise RuntimeError(f"no conversation id in {text[-200:]!r}")
    return match.group(1)


async def warm_server(env: dict[str, str], cwd: Path, runs: int, wait_for_requests: Any) -> dict[str, Any]:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "gemini_relay"], env={**env, "GEMINI_RELAY_WARM": "on"}, cwd=str(cwd)
    )
    out: dict[str, Any] = {}
    with Path(os.devnull).open("w", encoding="utf-8") as errlog:
        async with Client(stdio_client(params, errlog=errlog), mode="legacy") as client:
            await _ask(client, "warm up")  # waits for the prewarmed process if it is still booting
            server = _server_pid(env["GEMINI_CLI_HOME"])
            out["tree_rss_fresh"] = tree_rss(server) if server else 0
            later = []
            for i in range(runs):
                await anyio.sleep(PACE)
                later.append(await _ask(client, f"later {i}"))
            out["later"] = later
            host_after = _host_pid(server)  # the issue-16 figure: the host tree after `runs` plain asks
            out["host_tree_after_later"] = tree_rss(host_after) if host_after else 0
            # Back to back, as the shared bench's interleaving often sends them: the spare made after one call must
            # not hold up the next (backends/gemini_cli/acp/spares.py).
            out["back_to_back"] = [await _ask(client, f"next {i}") for i in range(runs)]
            conversation = await _conversation(client)
            continued = []
            for i in range(runs):
                await anyio.sleep(PACE)
                continued.append(await _ask(client, f"more {i}", conversation))
            out["continued"] = continued
            concurrent = []
            for _ in range(5):
                await anyio.sleep(BURST_PACE)
                start = time.perf_counter()
                async with anyio.create_task_group() as tg:
                    for j in range(4):
                        tg.start_soon(_ask, client, f"q{j}")
                concurrent.append(time.perf_counter() - start)
            out["concurrent"] = concurrent
            for shape, prompt in BIG.items():
                big = []
                for _ in range(5):
                    await anyio.sleep(PACE)
                    big.append(await _ask(client, prompt))
                out[f"big {shape}"] = big
            out["cancel"] = [await _cancel_latency(client, wait_for_requests, n) for n in range(5)]
            await anyio.sleep(PACE)
            out["tree_rss"] = tree_rss(server) if server else 0
            out["server_rss"] = _rss(server) if server else 0
            host = _host_pid(server)
            out["host_tree_rss"] = tree_rss(host) if host else 0
            out["host_rss"] = _rss(host) if host else 0
    return out


async def _cancel_latency(client: Client, wait_for_requests: Any, n: int) -> float:
    """gemini-cancel sent -> the stalled call's cancelled reply received."""
    replied = anyio.Event()
    at: list[float] = []

    async def stalled() -> None:
        await client.call_tool("gemini-ask", {"prompt": f"[[fake:stall]] {n}"})
        at.append(time.perf_counter())
        replied.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(stalled)
        await anyio.to_thread.run_sync(wait_for_requests)
        await anyio.sleep(PACE)  # the stalled chunk has reached the relay
        start = time.perf_counter()
        await client.call_tool("gemini-cancel", {})
        await replied.wait()
    return at[0] - start


__all__ = ["group_rss", "tree_rss", "warm_server"]
