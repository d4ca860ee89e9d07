"""Relay overhead against a bare `gemini -p`, measured in the same run against the local Gemini API emulator.

Prints medians over repeated runs of: spawn -> tools/list; a gemini-ask round trip (first call of a server with no
relay host running, so it pays the warm CLI's boot: sent at once, and 1 s after tools/list; and later calls); and the
baseline, a bare `gemini -p` with the same environment, each with its goal (a first call 1 s after the start <= bare
+ 50 ms, later calls <= 10 % of bare). Run: `.venv/bin/python -m bench.bench_core [--runs N]` after scripts/test has
installed the pinned CLI.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from bench.baseline import MODEL, bare_cli
from tests.fakes.fake_gemini_api import FakeGeminiApi
from tests.fakes.gemini_home import REPO_GEMINI_CLI, isolated_cli_env
from tests.harness import stop_host

IDLE = 1.0  # seconds between tools/list and a first call sent "later" (the warm CLI's boot then runs meanwhile)


def median_ms(samples: list[float]) -> str:
    return f"{statistics.median(samples) * 1000:8.0f} ms"


async def relay_round(env: dict[str, str], cwd: Path, asks: int, idle: float = 0.0) -> tuple[float, float, list[float]]:
    """Returns (spawn -> tools/list, first ask, later asks) for one server process; the first ask is sent `idle`
    seconds after tools/list (a client's model typically thinks that long before its first call)."""
    params = StdioServerParameters(command=sys.executable, args=["-m", "gemini_relay"], env=env, cwd=str(cwd))
    with Path(os.devnull).open("w", encoding="utf-8") as errlog:
        start = time.perf_counter()
        async with Client(stdio_client(params, errlog=errlog), mode="legacy") as client:
            await client.list_tools()
            listed = time.perf_counter() - start
            await anyio.sleep(idle)
            later: list[float] = []
            first = 0.0
            for i in range(asks + 1):
                t0 = time.perf_counter()
                result = await client.call_tool("gemini-ask", {"prompt": "hi"})
                elapsed = time.perf_counter() - t0
                if result.is_error:
                    raise RuntimeError(f"gemini-ask failed: {result.content}")
                if i == 0:
                    first = elapsed
                else:
                    later.append(elapsed)
    return listed, first, later


def timed(runs: int, fn: Callable[[], float]) -> list[float]:
    return [fn() for _ in range(runs)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="relay-bench-"))
    project = base / "proj"
    project.mkdir()
    with FakeGeminiApi() as api:
        cli_env = {"LANG": "C.UTF-8", **isolated_cli_env(base, api.base_url)}
        relay_env = {
            **cli_env,
            "GEMINI_CLI_PATH": str(REPO_GEMINI_CLI),
            "GEMINI_RELAY_PROJECT_ROOT": str(project),
            "GEMINI_MCP_BACKEND": "gemini",
            "GEMINI_DEFAULT_MODEL": MODEL,
            "GEMINI_RELAY_STATE_DIR": str(base / "state"),
        }
        bare_cli(cli_env, project)  # warm the page cache and the CLI home once
        listed: list[float] = []
        first: list[float] = []
        first_idle: list[float] = []
        later: list[float] = []
        bare: list[float] = []
        for _ in range(args.runs):
            # Interleave baseline and relay so machine noise hits both alike.
            bare += timed(2, lambda: bare_cli(cli_env, project))
            for idle in (0.0, IDLE):
                try:
                    lst, fst, ltr = anyio.run(relay_round, relay_env, project, 2, idle)
                finally:
                    stop_host(base / "state")  # so each server's first call meets no warm CLI: it pays the boot
                (first if idle == 0.0 else first_idle).append(fst)
                listed.append(lst)
                later += ltr
    b = statistics.median(bare)
    print(f"runs: {2 * args.runs} servers, {len(later)} later asks, {len(bare)} bare CLI runs (medians)")
    print(f"spawn -> tools/list           {median_ms(listed)}")
    f, fi, lt = statistics.median(first), statistics.median(first_idle), statistics.median(later)
    at_once = f"ratio {f / b:5.2f}x bare   {(f - b) * 1000:+7.1f} ms vs bare"
    print(f"gemini-ask, first call at once{median_ms(first)}   {at_once}")
    print(
        f"  ... {IDLE:g} s after tools/list {median_ms(first_idle)}   ratio {fi / b:5.2f}x bare   "
        f"{(fi - b) * 1000:+7.1f} ms vs bare   goal <= +50 ms"
    )
    print(f"gemini-ask, later calls       {median_ms(later)}   ratio {lt / b:5.2f}x bare   goal <= 0.10x")
    print(f"bare gemini -p (baseline)     {median_ms(bare)}")


if __name__ == "__main__":
    main()
