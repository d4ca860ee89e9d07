"""The relay host's cold path and the stdio server's start, against baselines measured in the same run.

Prints medians of: a gemini-ask later call with the host (GEMINI_RELAY_HOST=on), with the host and no start jitter,
and without the host (a supervisor per call), each minus a paired bare `gemini -p` (goal for the host: ≤ 50 ms);
and spawn → tools/list of the stdio server (a later start, answered by the stdio front; and a setup's first start)
against a minimal MCP server on the same SDK (goal ≤ 0.5 s), with the later start's first tools/call. Run:
`.venv/bin/python -m bench.bench_host [--runs N]` after scripts/test has installed the pinned CLI.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from bench.baseline import MODEL, bare_cli
from bench.bench_core import relay_round
from tests.fakes.fake_gemini_api import FakeGeminiApi
from tests.fakes.gemini_home import REPO_GEMINI_CLI, isolated_cli_env
from tests.harness import stop_host

MINIMAL_SERVER = """
import anyio, mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
async def tools(ctx, params):
    return types.ListToolsResult(tools=[types.Tool(name="ping", description="ping", input_schema={"type": "object"})])
server = Server("minimal", on_list_tools=tools)
async def main():
    async with stdio_server() as (r, w):
        await server.run(r, w, server.create_initialization_options())
anyio.run(main)
"""


async def listed(command: list[str], env: dict[str, str], cwd: Path, tool: str = "") -> tuple[float, float]:
    """spawn -> tools/list answered, and (with `tool`) spawn -> that tool's first call answered."""
    params = StdioServerParameters(command=command[0], args=command[1:], env=env, cwd=str(cwd))
    with Path(os.devnull).open("w", encoding="utf-8") as errlog:
        start = time.perf_counter()
        async with Client(stdio_client(params, errlog=errlog), mode="legacy") as client:
            await client.list_tools()
            listed_at = time.perf_counter() - start
            if tool:
                await client.call_tool(tool, {})
            return listed_at, time.perf_counter() - start


def ms(value: float) -> str:
    return f"{value * 1000:8.0f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="relay-bench-host-"))
    project = base / "proj"
    project.mkdir()
    modes = {
        "host": {"GEMINI_RELAY_HOST": "on"},
        "host, no jitter": {"GEMINI_RELAY_HOST": "on", "GEMINI_RELAY_JITTER_MS": "0"},
        "no host (executor in the server)": {"GEMINI_RELAY_HOST": "off"},
    }
    with FakeGeminiApi() as api:
        cli_env = {"LANG": "C.UTF-8", **isolated_cli_env(base, api.base_url)}
        relay_env = {**cli_env, "GEMINI_CLI_PATH": str(REPO_GEMINI_CLI), "GEMINI_RELAY_PROJECT_ROOT": str(project),
                     "GEMINI_MCP_BACKEND": "gemini", "GEMINI_DEFAULT_MODEL": MODEL}  # fmt: skip
        state = base / "home" / ".local" / "state" / "gemini-relay"
        bare_cli(cli_env, project)  # warm the page cache and the CLI home once
        bare: list[float] = []
        later: dict[str, list[float]] = {name: [] for name in modes}
        spawn: list[float] = []  # a later start: the stdio front answers from the shipped answers
        first_call: list[float] = []
        fresh: list[float] = []  # the first start of a setup (a new, empty state dir)
        minimal: list[float] = []
        try:
            for _ in range(args.runs):
                # Interleaved so machine noise hits every mode and its baseline alike.
                bare.append(bare_cli(cli_env, project))
                for name, extra in modes.items():
                    stop_host(state)  # each mode's settings start their own host
                    _, _, asks = anyio.run(relay_round, {**relay_env, **extra}, project, 2)
                    later[name] += asks
                server = [sys.executable, "-m", "gemini_relay"]
                later_start = anyio.run(listed, server, relay_env, project, "gemini-ping")
                spawn.append(later_start[0])
                first_call.append(later_start[1])
                new_state = {**relay_env, "GEMINI_RELAY_STATE_DIR": tempfile.mkdtemp(prefix="state-", dir=base)}
                fresh.append(anyio.run(listed, server, new_state, project)[0])
                minimal.append(anyio.run(listed, [sys.executable, "-c", MINIMAL_SERVER], relay_env, project)[0])
        finally:
            stop_host(state)
    b = statistics.median(bare)
    print(f"runs: {args.runs} (medians)")
    print(f"bare gemini -p (baseline)            {ms(b)}")
    for name, samples in later.items():
        m = statistics.median(samples)
        print(f"gemini-ask later call, {name:<18}{ms(m)}   overhead {ms(m - b)}   ratio {m / b:5.2f}x bare")
    s, mm, f = statistics.median(spawn), statistics.median(minimal), statistics.median(fresh)
    print(f"spawn -> tools/list, gemini-relay    {ms(s)}   ratio {s / mm:5.2f}x minimal   goal <= 500 ms")
    print(f"  its first tools/call answered      {ms(statistics.median(first_call))}   (gemini-ping: the SDK loaded)")
    print(f"  a setup's first start (new state) {ms(f)}   ratio {f / mm:5.2f}x minimal")
    print(f"spawn -> tools/list, minimal server  {ms(mm)}")


if __name__ == "__main__":
    main()
