"""Warm Gemini CLI over ACP against the local Gemini API emulator: medians and ratios, measured in one run.

Prints: a raw ACP `session/prompt` on a warm process (a minimal client, none of our code), AcpBackend.run on a
warm pool (a continued conversation, and a fresh one served from a spare session), 4 concurrent fresh runs on one
process, and a bare `gemini -p` as the cold baseline; then through the MCP stdio server with GEMINI_RELAY_WARM=on
(bench/warm_mcp.py): a later gemini-ask, 4 concurrent asks on one connection, a 200 KB answer's first chunk,
gemini-cancel -> cancelled reply, and the server tree's memory with one warm CLI; each with its goal and ratio.
Run: `.venv/bin/python -m bench.bench_acp [--runs N]`
after scripts/test has installed the pinned CLI. Figures, never assertions.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
import subprocess
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio

from bench.baseline import MODEL, bare_cli
from bench.warm_mcp import BIG, warm_server
from gemini_relay.backends.gemini_cli.acp import AcpBackend, WarmPool
from gemini_relay.backends.gemini_cli.acp.sessions import group_rss
from gemini_relay.config import Settings
from gemini_relay.core.events import AgentEvent, SessionStarted, TextDelta
from gemini_relay.core.spec import RunSpec
from tests.fakes.fake_gemini_api import FakeGeminiApi
from tests.fakes.gemini_home import REPO_GEMINI_CLI, isolated_cli_env
from tests.harness import stop_host

PACE = 0.2  # seconds between warm calls (not timed)
BURST_PACE = 1.0  # seconds between bursts of 4 (not timed): the spares a burst used are made again meanwhile
RAW_BURST: list[float] = []  # raw ACP: 4 prompts on 4 fresh sessions at once (session/new not timed)
RAW_NEW: list[float] = []  # raw ACP session/new, each followed by a first prompt
RAW_BIG: dict[str, list[float]] = {}  # raw ACP prompts answering 200 KB (whole answer) per SSE shape, by raw_prompts


def ms(seconds: float) -> str:
    return f"{seconds * 1000:9.1f} ms"


class RawAcp:
    """The least a client can do: write a request line, read lines until its response."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.next_id = 0

    async def burst(self, sessions: list[str]) -> float:
        """Prompts on every session at once; the time until the last response."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        start = time.perf_counter()
        ids = set()
        for session in sessions:
            self.next_id += 1
            ids.add(self.next_id)
            params = {"sessionId": session, "prompt": [{"type": "text", "text": "burst"}]}
            line = {"jsonrpc": "2.0", "id": self.next_id, "method": "session/prompt", "params": params}
            self.proc.stdin.write((json.dumps(line) + "\n").encode())
        await self.proc.stdin.drain()
        while ids:
            message = json.loads(await self.proc.stdout.readline())
            if "method" not in message:
                ids.discard(message.get("id"))
        return time.perf_counter() - start

    async def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.next_id += 1
        line = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        self.proc.stdin.write((json.dumps(line) + "\n").encode())
        await self.proc.stdin.drain()
        while True:
            message = json.loads(await self.proc.stdout.readline())
            if message.get("id") == self.next_id and "method" not in message:
                return message  # type: ignore[no-any-return]


@contextlib.asynccontextmanager
async def acp_process(env: dict[str, str], cwd: Path) -> AsyncIterator[asyncio.subprocess.Process]:
    """A bare `gemini --acp` on the bench's model, leading its own process group; stdin closed at the end."""
    proc = await asyncio.create_subprocess_exec(
        str(REPO_GEMINI_CLI),
        "--acp",
        "-m",
        MODEL,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
        cwd=cwd,
        start_new_session=True,
        limit=16 * 1024 * 1024,
    )
    try:
        yield proc
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        try:
            await asyncio.wait_for(proc.wait(), 5)
        except TimeoutError:
            os.killpg(proc.pid, 9)


async def raw_prompts(env: dict[str, str], cwd: Path, n: int) -> tuple[list[float], list[float]]:
    async with acp_process(env, cwd) as proc:
        raw = RawAcp(proc)
        await raw.call("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        session = (await raw.call("session/new", {"cwd": str(cwd), "mcpServers": []}))["result"]["sessionId"]
        samples, firsts = [], []
        for i in range(n + 1):
            start = time.perf_counter()
            await raw.call("session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": f"p{i}"}]})
            if i:  # the first prompt of a session pays one-off setup
                samples.append(time.perf_counter() - start)
        for shape, text in BIG.items():
            for _ in range(5):
                start = time.perf_counter()
                await raw.call("session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": text}]})
                RAW_BIG.setdefault(shape, []).append(time.perf_counter() - start)
        for _ in range(5):
            fresh_ids = [
                (await raw.call("session/new", {"cwd": str(cwd), "mcpServers": []}))["result"]["sessionId"]
                for _ in range(4)
            ]
            await asyncio.sleep(PACE)
            RAW_BURST.append(await raw.burst(fresh_ids))
        for i in range(max(n // 4, 3)):
            start = time.perf_counter()
            fresh = (await raw.call("session/new", {"cwd": str(cwd), "mcpServers": []}))["result"]["sessionId"]
            RAW_NEW.append(time.perf_counter() - start)
            await asyncio.sleep(PACE)
            start = time.perf_counter()
            await raw.call("session/prompt", {"sessionId": fresh, "prompt": [{"type": "text", "text": f"f{i}"}]})
            firsts.append(time.perf_counter() - start)
        return samples, firsts


async def timed_run(backend: AcpBackend, spec: RunSpec) -> tuple[float, list[AgentEvent]]:
    start = time.perf_counter()
    events = [event async for event in backend.run(spec)]
    return time.perf_counter() - start, events


async def warm_runs(settings: Settings, cwd: Path, n: int) -> dict[str, Any]:
    async with WarmPool() as pool:
        backend = AcpBackend(settings, pool)
        _, first = await timed_run(backend, RunSpec(tool="gemini-ask", prompt="warm up", cwd=cwd))
        started = first[0]
        assert isinstance(started, SessionStarted)
        continued, fresh = [], []
        for i in range(n):
            await anyio.sleep(PACE)  # calls arrive apart, as a client's do; the spare session is ready by then
            spec = RunSpec(tool="gemini-ask", prompt=f"c{i}", cwd=cwd, conversation_id=started.session_id)
            continued.append((await timed_run(backend, spec))[0])
            fresh.append((await timed_run(backend, RunSpec(tool="gemini-ask", prompt=f"n{i}", cwd=cwd)))[0])
        cancels = []
        for _ in range(5):
            await anyio.sleep(PACE)
            run = backend.run(RunSpec(tool="gemini-ask", prompt="[[fake:stall]]", cwd=cwd))
            async for event in run:
                if isinstance(event, TextDelta):
                    break
            start = time.perf_counter()
            await run.aclose()  # session/cancel, then the prompt's `cancelled` answer
            cancels.append(time.perf_counter() - start)
        concurrent = []
        for _ in range(5):
            await anyio.sleep(BURST_PACE)
            start = time.perf_counter()
            async with anyio.create_task_group() as tg:
                for j in range(4):
                    tg.start_soon(timed_run, backend, RunSpec(tool="gemini-ask", prompt=f"q{j}", cwd=cwd))
            concurrent.append(time.perf_counter() - start)
        rss = group_rss(pool.processes[0]) if pool.processes else 0
    return {"continued": continued, "fresh": fresh, "concurrent": concurrent, "rss": rss, "cancel": cancels}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="relay-bench-acp-"))
    project = base / "proj"
    project.mkdir()
    with FakeGeminiApi() as api:
        cli_env = {"LANG": "C.UTF-8", **isolated_cli_env(base, api.base_url)}
        settings = Settings.from_env(
            {**cli_env, "GEMINI_CLI_PATH": str(REPO_GEMINI_CLI), "GEMINI_RELAY_PROJECT_ROOT": str(project)}
            | {"GEMINI_DEFAULT_MODEL": MODEL}
        )
        bare_cli(cli_env, project)  # warm the page cache and the CLI home once
        bare = [bare_cli(cli_env, project) for _ in range(5)]
        raw, raw_first = asyncio.run(raw_prompts(cli_env, project, args.runs))
        warm = anyio.run(warm_runs, settings, project, args.runs)
        server_env = {
            **cli_env,
            "GEMINI_CLI_PATH": str(REPO_GEMINI_CLI),
            "GEMINI_RELAY_PROJECT_ROOT": str(project),
            "GEMINI_MCP_BACKEND": "gemini",
            "GEMINI_DEFAULT_MODEL": MODEL,
            "GEMINI_RELAY_STATE_DIR": str(base / "state"),
        }
        try:
            served = anyio.run(
                warm_server, server_env, project, args.runs, lambda: api.wait_for_requests(len(api.requests) + 1, 20.0)
            )
        finally:
            stop_host(base / "state")  # it would idle on for GEMINI_RELAY_HOST_IDLE with its warm CLI
    r = statistics.median(raw)
    cont, fresh = statistics.median(warm["continued"]), statistics.median(warm["fresh"])
    b = statistics.median(bare)
    print(f"runs: {args.runs} warm prompts each, {len(bare)} bare CLI runs (medians)")
    print(f"raw ACP session/prompt (warm)          {ms(r)}")
    print(f"AcpBackend.run, continued conversation {ms(cont)}   ratio {cont / r:6.2f}x raw")
    rf = statistics.median(raw_first)
    print(f"raw first prompt of a fresh session    {ms(rf)}   (session/new not timed)")
    print(f"AcpBackend.run, new conversation       {ms(fresh)}   ratio {fresh / rf:6.2f}x raw first prompt")
    burst = statistics.median(RAW_BURST)
    print(f"raw ACP, 4 prompts at once, total      {ms(burst)}   (4 fresh sessions, session/new not timed)")
    in_proc = statistics.median(warm["concurrent"])
    print(f"4 concurrent runs, one process, total  {ms(in_proc)}   ratio {in_proc / burst:6.2f}x raw")
    print(f"bare gemini -p (cold baseline)         {ms(b)}   warm run is {b / cont:6.1f}x faster")
    print(f"RSS of the warm process group          {warm['rss'] / (1024 * 1024):9.1f} MB")
    print(f"AcpBackend cancel -> turn cancelled    {ms(statistics.median(warm['cancel']))}   goal <= 100 ms")
    print("-- through the MCP stdio server, GEMINI_RELAY_WARM=on --")
    later = statistics.median(served["later"])
    print(f"gemini-ask, later call                 {ms(later)}   ratio {later / r:6.2f}x raw   goal <= 3x, <= 25 ms")
    print(f"  (a new conversation each: ratio {later / rf:4.2f}x the raw first prompt of a fresh session)")
    b2b = statistics.median(served["back_to_back"])
    print(f"gemini-ask, back to back (no pause)    {ms(b2b)}   ratio {b2b / r:6.2f}x raw   goal <= 3x")
    # With no pause no spare session is ready: each new conversation then waits for the CLI's session/new.
    floor = statistics.median(RAW_NEW) + rf
    print(f"  (each a new conversation: ratio {b2b / floor:4.2f}x raw session/new + first prompt, {ms(floor).strip()})")
    c = statistics.median(served["continued"])
    print(f"gemini-ask, continuing a conversation  {ms(c)}   ratio {c / r:6.2f}x raw   goal <= 3x, <= 25 ms")
    conc = statistics.median(served["concurrent"])
    print(f"4 concurrent gemini-ask, total         {ms(conc)}   ratio {conc / burst:6.2f}x raw   goal <= 50 ms")
    for shape in BIG:
        big, raw_big = statistics.median(served[f"big {shape}"]), statistics.median(RAW_BIG[shape])
        print(
            f"200 KB answer ({shape:>5} SSE), 1st chunk {ms(big)}   ratio {big / raw_big:6.2f}x raw whole answer"
            f" ({raw_big * 1000:.0f} ms)   goal <= 150 ms"
        )
    cancel = statistics.median(served["cancel"])
    print(f"gemini-cancel -> cancelled reply       {ms(cancel)}   goal <= 100 ms")
    mb = 1024 * 1024
    print(
        f"memory, host tree with one warm CLI    {served['host_tree_after_later'] / mb:9.1f} MB after "
        f"{len(served['later'])} later asks   goal <= 300 MB after 200 (--runs 200)"
    )
    print(
        f"memory, host tree with one warm CLI    {served['host_tree_rss'] / mb:9.1f} MB after all of the above "
        f"(host {served['host_rss'] / mb:.1f} MB)   goal <= 300 MB"
    )
    print(
        f"memory, + the stdio server             {served['tree_rss_fresh'] / mb:9.1f} MB after the first call, "
        f"{served['tree_rss'] / mb:.1f} MB after all of the above (server {served['server_rss'] / mb:.1f} MB)"
    )
    print(f"cold bare gemini -p vs warm gemini-ask {b / later:9.1f}x faster")


if __name__ == "__main__":
    main()
