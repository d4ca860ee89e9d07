"""The CPU a process start costs: a stdio server to its first tools/call, and a relay host to its first request.

The test suite starts hundreds of both and is CPU-bound, and every client start pays it too. Each run spawns, in
turn (so machine noise hits all alike): `python -c pass` and `python -c "import mcp.server"` (baselines), a stdio
server (`python -m gemini_relay`, api backend, GEMINI_RELAY_HOST=off) that answers initialize, tools/list and a
gemini-ping and exits on stdin EOF, and a relay host (`python -m gemini_relay host`) that answers hello and status and
shuts down when asked. CPU is user+sys of the child and what it reaped (os.wait4). Prints medians. Run:
`.venv/bin/python -m bench.start_cpu [--runs N] [--other /path/to/other/checkout/.venv/bin/python]`; with `--other`
the server and host starts of that interpreter's checkout (e.g. main's) are measured too, interleaved.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from bench.first_start import api_env
from gemini_relay import __version__
from gemini_relay.jobs.protocol import PROTOCOL, socket_address, socket_path

REPLY_BOUND = 60.0  # seconds: a loaded machine; a reply that never comes fails the run
INITIALIZE = {
    "protocolVersion": "2025-06-18",
    "capabilities": {},
    "clientInfo": {"name": "bench-start-cpu", "version": "0"},
}


def cpu_of(proc: subprocess.Popen[bytes]) -> float:
    """Reap `proc` (within REPLY_BOUND) and return its user+sys CPU seconds, its reaped children's included."""
    deadline = time.monotonic() + REPLY_BOUND
    while True:
        pid, _, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid == proc.pid:
            proc.returncode = 0  # reaped here: Popen must not wait for it again
            return usage.ru_utime + usage.ru_stime
        if time.monotonic() > deadline:
            proc.kill()
            raise TimeoutError(f"{proc.args!r} did not exit")
        time.sleep(0.005)


def python_c(code: str, env: dict[str, str]) -> float:
    proc = subprocess.Popen([sys.executable, "-c", code], env=env, stdin=subprocess.DEVNULL)
    return cpu_of(proc)


def server(env: dict[str, str], cwd: Path, python: str = sys.executable) -> float:
    messages: list[dict[str, Any]] = [
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": INITIALIZE},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "gemini-ping", "arguments": {}}},
    ]
    proc = subprocess.Popen(
        [python, "-m", "gemini_relay"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
        cwd=cwd,
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(b"".join(json.dumps(m).encode() + b"\n" for m in messages))
    proc.stdin.flush()
    for _ in range(3):
        reply = json.loads(proc.stdout.readline() or b"null")
        assert reply is not None and "result" in reply, f"the server did not answer: {reply!r}"
    assert "pong" in json.dumps(reply).lower(), f"gemini-ping's answer: {reply!r}"
    proc.stdin.close()  # EOF: the server exits
    try:
        return cpu_of(proc)
    finally:
        proc.stdout.close()


def host(env: dict[str, str], state: Path, python: str = sys.executable) -> float:
    proc = subprocess.Popen(
        [python, "-m", "gemini_relay", "host"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
        cwd=state,
    )
    path = socket_path(state)
    deadline = time.monotonic() + REPLY_BOUND
    while True:
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
                sock.settimeout(REPLY_BOUND)
                with socket_address(path) as address:
                    sock.connect(address)
                hello = {"op": "hello", "protocol": PROTOCOL, "version": __version__}
                lines = [hello, {"op": "status"}, {"op": "shutdown"}]
                sock.sendall(b"".join(json.dumps(m).encode() + b"\n" for m in lines))
                with sock.makefile("rb") as replies:
                    answers = [json.loads(replies.readline()) for _ in lines]
                assert answers[0]["ok"] and answers[2]["stopping"], f"the host's answers: {answers!r}"
                break
        except (FileNotFoundError, ConnectionRefusedError):
            if time.monotonic() > deadline:
                proc.kill()
                raise
            time.sleep(0.01)  # the socket does not accept yet: connect is the only signal there is
    return cpu_of(proc)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--other", default=None, help="another checkout's venv python, measured beside this one")
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="relay-bench-start-cpu-"))
    project = base / "proj"
    project.mkdir()
    env = api_env(base, project)  # the host is started with GEMINI_RELAY_HOST=on
    starts: dict[str, Callable[[int], float]] = {
        "python -c pass (baseline)": lambda _: python_c("pass", env),
        "python -c 'import mcp.server' (baseline)": lambda _: python_c("import mcp.server", env),
    }
    pythons = {"": sys.executable} | ({" (--other)": args.other} if args.other else {})
    for index, (suffix, python) in enumerate(pythons.items()):
        starts[f"server: spawn -> gemini-ping -> EOF exit{suffix}"] = partial(_server_run, env, base, index, python)
        starts[f"relay host: spawn -> status -> shutdown{suffix}"] = partial(_host_run, env, base, index, python)
    samples: dict[str, list[float]] = {name: [] for name in starts}
    for run in range(args.runs):
        for name, start in starts.items():  # interleaved: noise hits every kind alike
            samples[name].append(start(run))
    print(f"CPU per start (user+sys, medians of {args.runs} runs)")
    for name, values in samples.items():
        print(f"  {name:<52}{statistics.median(values):7.3f} s   (min {min(values):.3f})")


def _server_run(env: dict[str, str], base: Path, index: int, python: str, run: int) -> float:
    state = base / f"server-{index}-{run}"
    return server({**env, "GEMINI_RELAY_STATE_DIR": str(state)}, Path(env["GEMINI_RELAY_PROJECT_ROOT"]), python)


def _host_run(env: dict[str, str], base: Path, index: int, python: str, run: int) -> float:
    state = base / f"host-{index}-{run}"
    state.mkdir(parents=True)
    return host({**env, "GEMINI_RELAY_HOST": "on", "GEMINI_RELAY_STATE_DIR": str(state)}, state, python)


if __name__ == "__main__":
    main()
