"""What being warm costs: the relay host's memory across projects, and the slowest ask across a warm CLI's replacement.

"five projects": one server per project directory (5), each making one gemini-ask through the relay host
(GEMINI_RELAY_HOST=on); then the resident memory of the host's whole process tree (host + warm CLIs, from /proc)
against the goal <= 400 MB. "replacement": one server making N asks while GEMINI_RELAY_WARM_MAX_SESSIONS is small,
so the warm CLI is replaced several times; the slowest later ask against their median (goal: no ask pays a CLI boot,
~1 s). Run: `.venv/bin/python -m bench.bench_warm_memory [--asks N]` after scripts/test has installed the pinned CLI.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path

import anyio

from bench.baseline import MODEL
from bench.bench_core import relay_round
from tests.fakes.fake_gemini_api import FakeGeminiApi
from tests.fakes.gemini_home import REPO_GEMINI_CLI, isolated_cli_env
from tests.harness import host_serving, stop_host

PROJECTS = 5
GOAL_MB = 400


def _stat(pid: int) -> tuple[int, int] | None:
    """(parent pid, resident bytes) of a live process."""
    try:
        status = Path(f"/proc/{pid}/status").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    ppid = rss = 0
    for line in status.splitlines():
        if line.startswith("PPid:"):
            ppid = int(line.split()[1])
        elif line.startswith("VmRSS:"):
            rss = int(line.split()[1]) * 1024
    return ppid, rss


def tree_rss(root: int) -> tuple[int, int]:
    """(resident bytes summed over `root` and all its descendants, number of processes)."""
    info = {int(e.name): s for e in Path("/proc").iterdir() if e.name.isdigit() and (s := _stat(int(e.name)))}
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in info.items():
        children.setdefault(ppid, []).append(pid)
    total, count, todo = 0, 0, [root]
    while todo:
        pid = todo.pop()
        if pid in info:
            total += info[pid][1]
            count += 1
        todo += children.get(pid, [])
    return total, count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--asks", type=int, default=24, help="asks in the replacement scenario")
    parser.add_argument("--max-sessions", type=int, default=12, help="GEMINI_RELAY_WARM_MAX_SESSIONS there")
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="relay-bench-warm-"))
    with FakeGeminiApi() as api:
        cli_env = {"LANG": "C.UTF-8", **isolated_cli_env(base, api.base_url)}
        relay_env = {**cli_env, "GEMINI_CLI_PATH": str(REPO_GEMINI_CLI), "GEMINI_MCP_BACKEND": "gemini",
                     "GEMINI_DEFAULT_MODEL": MODEL, "GEMINI_RELAY_HOST": "on"}  # fmt: skip
        state = base / "state"
        try:
            for i in range(PROJECTS):
                project = base / f"proj{i}"
                project.mkdir()
                env = {**relay_env, "GEMINI_RELAY_PROJECT_ROOT": str(project), "GEMINI_RELAY_STATE_DIR": str(state)}
                anyio.run(relay_round, env, project, 0)
            pid = host_serving(state)
            rss, count = tree_rss(pid) if pid is not None else (0, 0)
        finally:
            stop_host(state)
        replaced = base / "state-replacement"
        project = base / "proj0"
        env = {**relay_env, "GEMINI_RELAY_PROJECT_ROOT": str(project), "GEMINI_RELAY_STATE_DIR": str(replaced),
               "GEMINI_RELAY_WARM_MAX_SESSIONS": str(args.max_sessions)}  # fmt: skip
        try:
            _, _, later = anyio.run(relay_round, env, project, args.asks)
        finally:
            stop_host(replaced)
    print(f"five projects: host tree RSS after one ask in each of {PROJECTS} projects "
          f"{rss / 2**20:7.0f} MB ({count} processes)   goal <= {GOAL_MB} MB")  # fmt: skip
    med, worst = statistics.median(later), max(later)
    print(f"replacement: {len(later)} later asks, GEMINI_RELAY_WARM_MAX_SESSIONS={args.max_sessions}: "
          f"median {med * 1000:6.0f} ms, slowest {worst * 1000:6.0f} ms ({worst / med:5.1f}x the median)")  # fmt: skip


if __name__ == "__main__":
    main()
