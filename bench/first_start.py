"""A first start over stdio (an empty state dir every time): how soon `initialize` and `tools/list` are answered.

Each run spawns the relay twice, interleaved so machine noise hits both alike, each time with a new state dir:
- front: the params Codex 0.169.0 sends, so the stdio front answers from the shipped answers;
- SDK (baseline): the same start with params the front leaves to the SDK (an empty `icons` list in clientInfo),
  which is how every first start was answered before the answers shipped: after the SDK and the tool layer load.
The front's start also times its first tools/call (gemini-ping), i.e. when the SDK took over. Prints medians; the
goal is initialize and tools/list within 300 ms of spawn. Run: `.venv/bin/python -m bench.first_start [--runs N]`.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

CODEX = {
    "protocolVersion": "2025-06-18",
    "capabilities": {"experimental": {"codex/auth-change": {}}, "elicitation": {"form": {}, "url": {}}},
    "clientInfo": {"name": "codex-mcp-client", "title": "Codex", "version": "0.169.0"},
}
LEFT_TO_THE_SDK = {**CODEX, "clientInfo": {**CODEX["clientInfo"], "icons": []}}  # type: ignore[dict-item]
GOAL = 0.3
REPLY_BOUND = 60.0  # seconds: a loaded machine; a reply that never comes fails the run


def start(env: dict[str, str], cwd: Path, params: dict[str, Any], *, ping: bool) -> list[float]:
    """Seconds from spawn to each reply: initialize, tools/list (and the first tools/call with `ping`)."""
    messages: list[dict[str, Any]] = [
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
    ]
    if ping:
        messages.append({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "gemini-ping"}})
    wire = b"".join(json.dumps(m).encode() + b"\n" for m in messages)
    began = time.perf_counter()
    with subprocess.Popen(
        [sys.executable, "-m", "gemini_relay"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
        cwd=cwd,
    ) as proc:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(wire)  # all at once, as a client that does not wait would
        proc.stdin.flush()
        times = []
        for _ in range(sum("id" in m for m in messages)):
            line = proc.stdout.readline()
            assert line, "the server closed stdout before answering"
            times.append(time.perf_counter() - began)
        proc.stdin.close()
        proc.wait(REPLY_BOUND)
    return times


def api_env(home: Path, project: Path) -> dict[str, str]:
    """A server's environment for a start: the api backend configured (nothing is called), no relay host."""
    return {
        "PATH": os.environ.get("PATH", os.defpath),
        "LANG": "C.UTF-8",
        "HOME": str(home),
        "GEMINI_RELAY_PROJECT_ROOT": str(project),
        "GEMINI_MCP_BACKEND": "api",
        "GEMINI_API_KEY": "bench-key",  # nothing is called: the backend must only be configured
        "GEMINI_RELAY_HOST": "off",  # nothing outlives a start
    }


def ms(value: float) -> str:
    return f"{value * 1000:7.0f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="relay-bench-first-start-"))
    project = base / "proj"
    project.mkdir()
    env = api_env(base, project)
    front: list[list[float]] = []
    sdk: list[list[float]] = []
    for run in range(args.runs):
        fresh = {"GEMINI_RELAY_STATE_DIR": str(base / f"state-{run}-front")}
        front.append(start({**env, **fresh}, project, CODEX, ping=True))
        fresh = {"GEMINI_RELAY_STATE_DIR": str(base / f"state-{run}-sdk")}
        sdk.append(start({**env, **fresh}, project, LEFT_TO_THE_SDK, ping=False))
    column = [statistics.median(times) for times in zip(*front, strict=True)]
    baseline = [statistics.median(times) for times in zip(*sdk, strict=True)]
    print(f"first starts: {args.runs} each (medians; empty state dir every time)")
    print(f"spawn -> initialize   front {ms(column[0])}   SDK (baseline) {ms(baseline[0])}   goal <= {ms(GOAL)}")
    print(f"spawn -> tools/list   front {ms(column[1])}   SDK (baseline) {ms(baseline[1])}   goal <= {ms(GOAL)}")
    print(f"spawn -> first call   front {ms(column[2])}   (gemini-ping: the SDK took over)")


if __name__ == "__main__":
    main()
