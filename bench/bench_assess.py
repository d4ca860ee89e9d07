"""gemini-assess on a generated 5,000-file diff, beside `git diff --numstat` alone, measured in the same run.

Builds a throwaway repository with N committed files spread over nested directories (code, docs, a lockfile, a few
binaries), rewrites every one of them, then reports medians of: the bare `git diff --numstat HEAD` (the floor); the
assess pipeline in-process (git numstat + untracked listing + classification + rendering, as the tool runs it); and
gemini-assess through the MCP client against the server over stdio. Run: `.venv/bin/python -m bench.bench_assess
[--files 5000] [--runs 15]`. No model is called.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from gemini_relay.content.diff_assessment import assess_changes
from gemini_relay.content.git_diff import DiffSpec, changes_and_untracked, git_env
from tests.git_repo import GIT_ENV, GitRepo

EXTENSIONS = (".py", ".ts", ".go", ".md", ".yaml", ".rs")


def build_repo(root: Path, files: int) -> None:
    repo = GitRepo.create(root)
    for i in range(files):
        directory = root / f"pkg{i % 25}" / f"mod{i % 7}"
        directory.mkdir(parents=True, exist_ok=True)
        if i % 500 == 499:
            (directory / f"asset{i}.bin").write_bytes(bytes([0, i % 256, 1, 2]))
        else:
            text = "".join(f"line {n} of file {i}\n" for n in range(12))
            (directory / f"file{i}{EXTENSIONS[i % len(EXTENSIONS)]}").write_text(text, encoding="utf-8")
    (root / "package-lock.json").write_text('{"lockfileVersion": 3}\n', encoding="utf-8")
    repo.commit("seed")
    for path in root.rglob("*"):
        if path.is_file() and ".git" not in path.parts:
            if path.suffix == ".bin":
                path.write_bytes(path.read_bytes() + b"\0\3")
            else:
                path.write_text(path.read_text(encoding="utf-8").replace("line 3 ", "LINE 3 ") + "tail\n")


def bare_numstat(root: Path) -> float:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(root), **GIT_ENV}
    start = time.perf_counter()
    subprocess.run(["git", "diff", "--numstat", "HEAD"], cwd=root, env=env, capture_output=True, check=True)
    return time.perf_counter() - start


async def pipeline(root: Path) -> tuple[float, int]:
    env = git_env(os.environ)
    start = time.perf_counter()
    changes, untracked = await changes_and_untracked(root, DiffSpec(), env)
    assert isinstance(untracked, list)
    assess_changes(DiffSpec(), root, changes, untracked).render()
    return time.perf_counter() - start, len(changes)


async def through_mcp(root: Path, runs: int) -> tuple[list[float], str]:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(root.parent),
        "GEMINI_RELAY_PROJECT_ROOT": str(root),
        "GEMINI_RELAY_TOOLSETS": "review",
        "GEMINI_MCP_BACKEND": "gemini",
    }
    params = StdioServerParameters(command=sys.executable, args=["-m", "gemini_relay"], env=env, cwd=str(root))
    samples: list[float] = []
    first_line = ""
    with Path(os.devnull).open("w", encoding="utf-8") as errlog:
        async with Client(stdio_client(params, errlog=errlog), mode="legacy") as client:
            for _ in range(runs + 1):
                start = time.perf_counter()
                result = await client.call_tool("gemini-assess", {})
                samples.append(time.perf_counter() - start)
                if result.is_error:
                    raise SystemExit(f"gemini-assess failed: {result.content}")
                first_line = getattr(result.content[0], "text", "").splitlines()[1]
    return samples[1:], first_line  # the first call also warms the server's imports


def ms(samples: list[float]) -> str:
    return f"{statistics.median(samples) * 1000:7.1f} ms (min {min(samples) * 1000:.1f}, max {max(samples) * 1000:.1f})"


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--files", type=int, default=5000)
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-assess-") as tmp:
        root = Path(tmp) / "repo"
        built = time.perf_counter()
        build_repo(root, args.files)
        print(f"repository with {args.files} changed files built in {time.perf_counter() - built:.1f}s")
        bare = [bare_numstat(root) for _ in range(args.runs)]
        inproc: list[float] = []
        for _ in range(args.runs):
            seconds, count = await pipeline(root)
            inproc.append(seconds)
        mcp, summary = await through_mcp(root, args.runs)
        print(f"diff: {count} files; tool reports: {summary}")
        print(f"git diff --numstat HEAD (bare)      median {ms(bare)}")
        print(f"assess pipeline (in-process)        median {ms(inproc)}")
        print(f"gemini-assess via MCP (stdio)       median {ms(mcp)}")


if __name__ == "__main__":
    anyio.run(main)
