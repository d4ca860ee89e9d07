"""Relay overhead against a bare `gemini -p`, measured in the same run against the local Gemini API emulator.

Prints medians over repeated runs of: spawn -> tools/list; a gemini-ask round trip (first call of a server, and
later calls); and the baseline, a bare `gemini -p` with the same environment. Run: `.venv/bin/python -m
bench.bench_core [--runs N]` after scripts/test has installed the pinned CLI.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from tests.fakes.fake_gemini_api import FakeGeminiApi
from tests.fakes.gemini_home import REPO_GEMINI_CLI, isolated_cli_env

MODEL = "gemini-2.5-pro"


def median_ms(samples: list[float]) -> str:
    return f"{statistics.median(samples) * 1000:8.0f} ms"


def bare_cli(env: dict[str, str], cwd: Path) -> float:
    start = time.perf_counter()
    subprocess.run(
        [str(REPO_GEMINI_CLI), "-p", "hi", "-m", MODEL, "--output-format", "stream-json"],
        env=env,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        check=True,
        start_new_session=True,
    )
    return time.perf_counter() - start


async def relay_round(env: dict[str, str], cwd: Path, asks: int) -> tuple[float, float, list[float]]:
    """Returns (spawn -> tools/list, first ask, later asks) for one server process."""
    params = StdioServerParameters(command=sys.executable, args=["-m", "gemini_relay"], env=env, cwd=str(cwd))
    with Path(os.devnull).open("w", encoding="utf-8") as errlog:
        start = time.perf_counter()
        async with Client(stdio_client(params, errlog=errlog), mode="legacy") as client:
            await client.list_tools()
            listed = time.perf_counter() - start
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
        }
        bare_cli(cli_env, project)  # warm the page cache and the CLI home once
        listed: list[float] = []
        first: list[float] = []
        later: list[float] = []
        bare: list[float] = []
        for _ in range(args.runs):
            # Interleave baseline and relay so machine noise hits both alike.
            bare += timed(2, lambda: bare_cli(cli_env, project))
            lst, fst, ltr = anyio.run(relay_round, relay_env, project, 2)
            listed.append(lst)
            first.append(fst)
            later += ltr
    b = statistics.median(bare)
    print(f"runs: {args.runs} servers, {len(later)} later asks, {len(bare)} bare CLI runs (medians)")
    print(f"spawn -> tools/list           {median_ms(listed)}")
    print(f"gemini-ask, first call        {median_ms(first)}   ratio {statistics.median(first) / b:5.2f}x bare")
    print(f"gemini-ask, later calls       {median_ms(later)}   ratio {statistics.median(later) / b:5.2f}x bare")
    print(f"bare gemini -p (baseline)     {median_ms(bare)}")


if __name__ == "__main__":
    main()
