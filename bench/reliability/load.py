"""load: many concurrent calls from many clients of one HTTP server with the run cap at 3.

Every call must be answered exactly once with its own answer; CLI processes of the server, sampled from /proc, never
exceed the cap; the progress keepalives of a call are never silent past the interval (plus scheduling slack on a
loaded 2-core machine); the peak RSS of the server and its children is printed.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import anyio

from bench.kill9 import _cmdline, processes_of
from bench.reliability.table import Figure, printed, zero
from bench.reliability.world import CALL_BOUND, call, left_running, world
from tests.harness import cli_processes
from tests.transports.http_server import serve_http

CATEGORY = "load"
CAP = 3
INTERVAL = 1.0  # GEMINI_RELAY_PROGRESS_INTERVAL during the attack
SLACK = 2.0  # a keepalive may be this late on a loaded machine before it counts as silence


def _pgid(pid: int) -> int | None:
    """The process group of `pid`, None once it is gone."""
    try:
        return os.getpgid(pid)
    except OSError:
        return None


def rss_kb(pids: list[int]) -> int:
    total = 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except (OSError, ValueError):
            continue
    return total


async def attack(short: bool) -> list[Figure]:
    calls, clients = (CAP + 1, 3) if short else (200, 10)  # short: one call past the cap in flight, so the cap bites
    env = {"GEMINI_RELAY_MAX_CONCURRENT": str(CAP), "GEMINI_RELAY_PROGRESS_INTERVAL": str(INTERVAL),
           "GEMINI_RELAY_QUEUE_WAIT": "none", "GEMINI_RELAY_JITTER_MS": "0",
           "GEMINI_RELAY_HOST_IDLE": "2"}  # fmt: skip
    # GEMINI_RELAY_HOST_IDLE: the relay host outlives the server by design; it must be gone before the count
    bound = max(calls * 10.0, 2 * CALL_BOUND)  # a hang bound: queued calls wait for a round of runs ahead of them
    answers: dict[int, list[str]] = {n: [] for n in range(calls)}
    silences: list[str] = []
    failures: list[str] = []
    peak = {"cli": 0, "rss": 0}
    over: list[str] = []
    with world("load", GEMINI_RELAY_TOOLSETS="", **env) as w:
        w.relay.api.set_scenario(None)
        with serve_http(w.relay.env, w.relay.project, w.relay.stderr_path) as server:
            done = anyio.Event()

            async def sample() -> None:
                while not done.is_set():
                    # runs of the CLI (its argv), not the processes a CLI starts itself (they inherit its env); each
                    # run is its own process group, so a run counts once even when the CLI relaunched itself and one
                    # of the two was reparented (or gone) by the time it was read
                    runs = [p for p in cli_processes(w.relay.home) if b"--output-format" in _cmdline(p)]
                    groups: dict[int, list[int]] = {}
                    for pid in runs:
                        if (group := _pgid(pid)) is not None:
                            groups.setdefault(group, []).append(pid)
                    peak["cli"] = max(peak["cli"], len(groups))
                    if len(groups) > CAP and len(over) < 5:
                        over.append("; ".join(f"group {g}: pids {pids}" for g, pids in groups.items()))
                    peak["rss"] = max(peak["rss"], rss_kb(processes_of(w.relay.base)))
                    await anyio.sleep(0.02)

            async def one(client: Any, n: int) -> None:
                stamps = [time.monotonic()]

                async def progress(_p: float, _t: float | None, _m: str | None) -> None:
                    stamps.append(time.monotonic())

                try:
                    answer = await call(client, "gemini-ask", {"prompt": f"load call {n}"}, bound=bound,
                                        progress_callback=progress)  # fmt: skip
                    answers[n].append(answer.text)
                except Exception as exc:  # noqa: BLE001 - an unanswered call is a finding
                    failures.append(f"call {n}: {exc!r}")
                stamps.append(time.monotonic())
                gap = max(b - a for a, b in zip(stamps, stamps[1:], strict=False))
                if gap > INTERVAL + SLACK:
                    silences.append(f"call {n}: {gap:.1f}s without a keepalive (interval {INTERVAL:g}s)")

            async def client_of(index: int) -> None:
                async with server.client() as client, anyio.create_task_group() as tg:
                    for n in range(index, calls, clients):
                        tg.start_soon(one, client, n)

            async with anyio.create_task_group() as outer:
                outer.start_soon(sample)
                async with anyio.create_task_group() as tg:
                    for index in range(clients):
                        tg.start_soon(client_of, index)
                done.set()
        left = await left_running(w)
    wrong = [f"call {n}: {len(texts)} answers {[t[:60] for t in texts]}" for n, texts in answers.items()
             if len(texts) != 1 or f"load call {n}" not in texts[0]]  # fmt: skip
    return [
        Figure(
            CATEGORY,
            "concurrent calls × clients (one HTTP server)",
            f"{calls} × {clients}",
            "200 × 10" if not short else "small",
            True,
        ),  # fmt: skip
        zero(CATEGORY, "calls not answered exactly once with their own answer", failures + wrong),
        Figure(CATEGORY, f"peak CLI processes (cap {CAP})", peak["cli"], f"≤ {CAP}", peak["cli"] <= CAP, over),
        zero(CATEGORY, f"keepalive silences past {INTERVAL:g}s + {SLACK:g}s", silences),
        printed(CATEGORY, "peak RSS, server + children", f"{peak['rss'] / 1024:.0f} MB"),
        zero(CATEGORY, "processes left (load)", left),
    ]
