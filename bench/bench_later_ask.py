"""A later warm gemini-ask through the MCP stdio server against the raw ACP floor, interleaved in one run.

The floor is a warm `gemini --acp` driven directly (bench_acp.RawAcp: write a `session/prompt`, read to its answer)
against the same emulator, as ../shared/bench's `acp` target does: one session, continued, its history growing.
Beside it the fresh floor: the same process prompting a session made ahead of it, as the relay's warm CLI does for
every new conversation (gemini-ask without a conversationId). The relay is `python -m gemini_relay` with its
defaults (warm on: the relay host serves the run from its warm CLI). All stay up for a round and their calls
alternate, so the load of a shared machine falls on each alike. Printed per round: the medians of each call's
total and of its part before the upstream (call sent -> the emulator's request), the mean CPU time each side's
process tree spent per call (relay: server, host and warm CLI), and the ratios relay / floor and relay / fresh.
Run: `.venv/bin/python -m bench.bench_later_ask [--runs N] [--rounds R]` after scripts/test has installed the CLI.
Figures, never assertions.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable
from pathlib import Path

from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from bench.baseline import MODEL
from bench.bench_acp import RawAcp, acp_process
from bench.warm_mcp import _host_pid, _server_pid
from tests.fakes.fake_gemini_api import FakeGeminiApi
from tests.fakes.gemini_home import REPO_GEMINI_CLI, isolated_cli_env
from tests.harness import stop_host

PACE = 0.2  # seconds between calls (not timed): calls arrive apart, as a client's do
TICK = os.sysconf("SC_CLK_TCK")
Samples = dict[str, list[float]]


def cpu(pids: list[int]) -> float:
    """CPU seconds (user + system) used so far by `pids` and every descendant of them."""
    children: dict[int, list[int]] = {}
    used: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rpartition(")")[2].split()
            except OSError:
                continue
            used[int(entry.name)] = int(fields[11]) + int(fields[12])
            children.setdefault(int(fields[1]), []).append(int(entry.name))
    total, todo = 0, list(pids)
    while todo:
        pid = todo.pop()
        todo.extend(children.get(pid, []))
        total += used.get(pid, 0)
    return total / TICK


class Side:
    """One side's samples: total, before the upstream, CPU of its process tree."""

    def __init__(self, name: str, api: FakeGeminiApi, pids: list[int], out: Samples) -> None:
        self.name, self.api, self.pids, self.out = name, api, pids, out

    async def timed(self, call: Awaitable[object]) -> None:
        used, seen, sent = cpu(self.pids), len(self.api.requests), time.monotonic()
        await call
        self.out.setdefault(self.name, []).append(time.monotonic() - sent)
        self.out.setdefault(f"{self.name} cpu", []).append(cpu(self.pids) - used)
        request = self.api.wait_for_requests(seen + 1, 30.0)[seen]
        self.out.setdefault(f"{self.name} pre", []).append(request.at - sent)


async def one_round(
    api: FakeGeminiApi, relay_env: dict[str, str], cli_env: dict[str, str], cwd: Path, runs: int
) -> Samples:
    params = StdioServerParameters(command=sys.executable, args=["-m", "gemini_relay"], env=relay_env, cwd=str(cwd))
    out: Samples = {}
    async with acp_process(cli_env, cwd) as proc:
        raw = RawAcp(proc)
        await raw.call("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        session = (await raw.call("session/new", {"cwd": str(cwd), "mcpServers": []}))["result"]["sessionId"]
        await raw.call("session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": "warm up"}]})
        with Path(os.devnull).open("w", encoding="utf-8") as errlog:
            async with Client(stdio_client(params, errlog=errlog), mode="legacy") as client:
                for prompt in ("warm up", "warm up again"):  # the first waits for the warm CLI's boot
                    await client.call_tool("gemini-ask", {"prompt": prompt})
                server = _server_pid(cli_env["GEMINI_CLI_HOME"])
                floor = Side("floor", api, [proc.pid], out)
                fresh = Side("fresh", api, [proc.pid], out)
                relay = Side("relay", api, [server, _host_pid(server)], out)
                for i in range(runs):
                    spare = (await raw.call("session/new", {"cwd": str(cwd), "mcpServers": []}))["result"]["sessionId"]
                    await asyncio.sleep(PACE)
                    blocks = [{"type": "text", "text": f"p{i}"}]
                    await floor.timed(raw.call("session/prompt", {"sessionId": session, "prompt": blocks}))
                    await asyncio.sleep(PACE)
                    blocks = [{"type": "text", "text": f"f{i}"}]
                    await fresh.timed(raw.call("session/prompt", {"sessionId": spare, "prompt": blocks}))
                    await asyncio.sleep(PACE)
                    await relay.timed(_ask(client, f"later {i}"))
    return out


async def _ask(client: Client, prompt: str) -> None:
    result = await client.call_tool("gemini-ask", {"prompt": prompt})
    if result.is_error:
        raise RuntimeError(f"gemini-ask failed: {result.content}")


def ms(seconds: float) -> str:
    return f"{seconds * 1000:7.1f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=20, help="later asks per round")
    parser.add_argument("--rounds", type=int, default=3, help="rounds, each with a fresh relay server and floor")
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="relay-bench-later-"))
    project = base / "proj"
    project.mkdir()
    rounds: list[Samples] = []
    with FakeGeminiApi() as api:
        cli_env = {"LANG": "C.UTF-8", **isolated_cli_env(base, api.base_url)}
        relay_env = {**cli_env, "GEMINI_CLI_PATH": str(REPO_GEMINI_CLI), "GEMINI_RELAY_PROJECT_ROOT": str(project),
                     "GEMINI_MCP_BACKEND": "gemini", "GEMINI_DEFAULT_MODEL": MODEL,
                     "GEMINI_RELAY_STATE_DIR": str(base / "state")}  # fmt: skip
        try:
            for _ in range(args.rounds):
                rounds.append(asyncio.run(one_round(api, relay_env, cli_env, project, args.runs)))
                stop_host(base / "state")
        finally:
            stop_host(base / "state")
    print(f"{args.rounds} rounds of {args.runs} later asks: floor, fresh floor and relay interleaved (medians)")
    print(f"{'round':>5} {'floor':>10} {'fresh':>10} {'relay':>10} {'ratio':>6} {'/fresh':>6}   "
          f"before the upstream: floor, relay   CPU per call (trees, mean): floor, relay")  # fmt: skip
    for n, out in enumerate(rounds, 1):
        m = {key: statistics.median(values) for key, values in out.items()}
        m |= {key: statistics.mean(values) for key, values in out.items() if key.endswith("cpu")}
        print(
            f"{n:>5} {ms(m['floor'])} {ms(m['fresh'])} {ms(m['relay'])} {m['relay'] / m['floor']:5.2f}x "
            f"{m['relay'] / m['fresh']:5.2f}x   {ms(m['floor pre'])} {ms(m['relay pre'])}   "
            f"{ms(m['floor cpu'])} {ms(m['relay cpu'])}"
        )
    for name in ("floor", "fresh"):
        ratios = [statistics.median(out["relay"]) / statistics.median(out[name]) for out in rounds]
        print(f"median of the rounds' relay / {name}: {statistics.median(ratios):.2f}x")
    print("goal: relay <= 2.0x the floor (../shared/bench's acp target continues one session)")


if __name__ == "__main__":
    main()
