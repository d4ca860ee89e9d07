"""Later warm gemini-asks of this checkout against another's (e.g. main's), interleaved in one run.

A change on a later ask's path is a millisecond or less of a ~15 ms call, and two runs of the same code differ by
more than that: this puts both checkouts' servers on one machine at one time. Each round starts, for each
checkout in turn, a relay host and a stdio server (`python -m gemini_relay`, its own state dir, the warm Gemini
CLI against the project's emulator, GEMINI_DEFAULT_MODEL set) and times ASKS later asks, each a new conversation,
from a client that writes JSON-RPC lines and reads the answer's line (no SDK between: its own ~1.5 ms per call would
blur what is measured). Prints each round's medians and, over the rounds, the median ratio this / other.
Run: `.venv/bin/python -m bench.bench_ask_ab --other /path/to/other/.venv/bin/python [--rounds R] [--asks N]`;
without --other it measures this checkout alone. Figures, never assertions.
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

from bench.baseline import MODEL
from tests.fakes.fake_gemini_api import FakeGeminiApi
from tests.fakes.gemini_home import REPO_GEMINI_CLI, isolated_cli_env
from tests.harness import stop_host

PACE = 0.05  # seconds between asks (not timed)
WARM_UP_ASKS = 3  # the first boots the warm CLI; none of these is counted
INITIALIZE = {
    "protocolVersion": "2025-06-18",
    "capabilities": {},
    "clientInfo": {"name": "bench-ask-ab", "version": "0"},
}


class LineClient:
    """JSON-RPC over a server's stdio, one line each way."""

    def __init__(self, python: str, env: dict[str, str], cwd: Path) -> None:
        self.proc = subprocess.Popen(
            [python, "-m", "gemini_relay"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            env=env, cwd=cwd, start_new_session=True,
        )  # fmt: skip
        self.next_id = 0

    def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.next_id += 1
        line = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        self.proc.stdin.write(json.dumps(line).encode() + b"\n")
        self.proc.stdin.flush()
        while True:
            message = json.loads(self.proc.stdout.readline())
            if message.get("id") == self.next_id:
                return message  # type: ignore[no-any-return]

    def ask(self, prompt: str) -> float:
        start = time.perf_counter()
        reply = self.call("tools/call", {"name": "gemini-ask", "arguments": {"prompt": prompt}})
        took = time.perf_counter() - start
        if "error" in reply or reply["result"].get("isError"):
            raise RuntimeError(f"gemini-ask failed: {str(reply)[:300]}")
        return took

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(30)


def later_asks(python: str, env: dict[str, str], cwd: Path, asks: int) -> list[float]:
    client = LineClient(python, env, cwd)
    try:
        client.call("initialize", INITIALIZE)
        assert client.proc.stdin is not None
        client.proc.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        client.call("tools/list", {})
        times = []
        for i in range(WARM_UP_ASKS + asks):
            took = client.ask(f"ask {i}")
            if i >= WARM_UP_ASKS:
                times.append(took)
            time.sleep(PACE)
        return times
    finally:
        client.close()
        stop_host(Path(env["GEMINI_RELAY_STATE_DIR"]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--other", help="another checkout's venv python, measured beside this one")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--asks", type=int, default=60, help="later asks per checkout and round")
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="relay-bench-ask-ab-"))
    project = base / "proj"
    project.mkdir()
    sides = {"this": sys.executable} | ({"other": args.other} if args.other else {})
    rounds: list[dict[str, float]] = []
    with FakeGeminiApi() as api:
        cli_env = {"LANG": "C.UTF-8", **isolated_cli_env(base, api.base_url)}
        for n in range(args.rounds):
            medians: dict[str, float] = {}
            order = list(sides.items()) if n % 2 == 0 else list(reversed(sides.items()))
            for name, python in order:
                env = {**os.environ, **cli_env, "GEMINI_CLI_PATH": str(REPO_GEMINI_CLI),
                       "GEMINI_RELAY_PROJECT_ROOT": str(project), "GEMINI_MCP_BACKEND": "gemini",
                       "GEMINI_DEFAULT_MODEL": MODEL, "GEMINI_RELAY_STATE_DIR": str(base / name)}  # fmt: skip
                medians[name] = statistics.median(later_asks(python, env, project, args.asks))
            rounds.append(medians)
            shown = "  ".join(f"{name} {value * 1000:6.2f} ms" for name, value in medians.items())
            ratio = f"  this/other {medians['this'] / medians['other']:.3f}" if args.other else ""
            print(f"round {n + 1}: {shown}{ratio}")
    if args.other:
        overall = statistics.median(r["this"] / r["other"] for r in rounds)
        print(f"median over {args.rounds} rounds of this / other: {overall:.3f}")


if __name__ == "__main__":
    main()
