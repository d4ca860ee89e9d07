"""host-loss: the relay host going away under live servers. A host killed outright after a burst of calls, calls
racing its idle exit, a host stalled (SIGSTOP) past the request bound, idle servers' kept connections after bursts,
and an older and a newer relay on one state dir at a cap of 1. No call may fail as "internal error"; a lost host is
replaced without a failed call, a stalled one is a named, retryable failure; an idle server holds one connection; two
versions keep one host and the older server defers to the newer.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
from pathlib import Path
from typing import Any

import anyio
from mcp import Client

from bench.kill9 import World
from bench.reliability.table import Figure, at_least, at_most, zero
from bench.reliability.world import Answer, call, client, left_running, state_dir, world
from gemini_relay import __version__
from gemini_relay.jobs.protocol import PROTOCOL, socket_address, socket_path

CATEGORY = "host-loss"
INTERNAL = "internal error"
ENV = {"GEMINI_RELAY_HOST": "on", "GEMINI_MCP_BACKEND": "api", "GEMINI_RELAY_TOOLSETS": "jobs"}
OLDER = "0.0.1"
EDGE = 0.05
STALL_BOUND = "3"  # GEMINI_RELAY_HOST_TIMEOUT where the host is stalled: the wait is this bound
# Makes every Python process started with this PYTHONPATH (a server, and the host it starts) an older relay.
SITECUSTOMIZE = (
    "import os\nif os.environ.get('RELAY_BENCH_VERSION'):\n    import gemini_relay\n"
    "    gemini_relay.__version__ = os.environ['RELAY_BENCH_VERSION']\n"
)


def host_status(w: World, version: str = __version__) -> dict[str, Any]:
    """The host's `status` (the empty dict when none answers)."""
    path = socket_path(state_dir(w))
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(10)
            with socket_address(path) as address:
                sock.connect(address)
            with sock.makefile("rwb") as stream:
                for message in ({"op": "hello", "protocol": PROTOCOL, "version": version}, {"op": "status"}):
                    stream.write(json.dumps(message).encode() + b"\n")
                    stream.flush()
                    reply = json.loads(stream.readline())
                return dict(reply)
    except (OSError, ValueError):
        return {}


async def until_gone(pid: int, bound: float = 20.0) -> None:
    with anyio.move_on_after(bound):
        while Path(f"/proc/{pid}").exists() and b"host" in _cmdline(pid):
            await anyio.sleep(0.02)


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


async def burst(c: Client, count: int, tag: str) -> list[Answer]:
    answers: list[Answer] = []

    async def ask(index: int) -> None:
        answers.append(await call(c, "gemini-ask", {"prompt": f"[[fake:slow:0.2]] {tag} {index}"}))

    async with anyio.create_task_group() as tg:
        for index in range(count):
            tg.start_soon(ask, index)
    return answers


def failed(where: str, answers: list[Answer]) -> list[str]:
    return [f"{where}: {a.text[:120]}" for a in answers if a.is_error]


async def kill_after_bursts(w: World, c: Client, rounds: int) -> list[str]:
    """Bursts of 4, then the host is killed outright: the next call must answer (a new host), every time."""
    findings: list[str] = []
    for n in range(rounds):
        findings += failed(f"round {n} burst", await burst(c, 4, f"round {n}"))
        pid = int(host_status(w).get("pid") or 0)
        if pid:
            os.kill(pid, signal.SIGKILL)
            await until_gone(pid)
        findings += failed(f"round {n} after the kill", [await call(c, "gemini-ask", {"prompt": "after"})])
    return findings


def killed_figures(rounds: int, findings: list[str], left: list[str]) -> list[Figure]:
    return [
        at_least(CATEGORY, "hosts killed outright after a burst", rounds, rounds),
        zero(CATEGORY, "calls failing after the host was killed (or in its bursts)", findings),
        zero(CATEGORY, "processes left after host kills", left),
    ]


async def killed(rounds: int) -> list[Figure]:
    with world("host-killed", **ENV) as w:
        async with client(w) as c:
            findings = await kill_after_bursts(w, c, rounds)
        left = await left_running(w)
    return killed_figures(rounds, findings, left)


async def idle_race(calls: int) -> list[Figure]:
    """Calls spaced around a short idle exit: some land as the host exits; none may fail."""
    findings: list[str] = []
    with world("host-idle-race", **ENV, GEMINI_RELAY_HOST_IDLE="0.5") as w:
        async with client(w) as c:
            for n in range(calls):
                await anyio.sleep(0.3 + (n % 5) * 0.1)  # on both sides of the exit, which is polled every 0.125 s
                findings += failed(f"call {n}", [await call(c, "gemini-ask", {"prompt": f"race {n}"})])
        left = await left_running(w)
    return [
        at_least(CATEGORY, "calls racing the host's idle exit", calls, calls),
        zero(CATEGORY, "calls racing the idle exit that failed", findings),
        zero(CATEGORY, "processes left after the idle-exit race", left),
    ]


async def stall(w: World, c: Client) -> list[str]:
    """A host stopped past the request bound: the call is host_unresponsive (retryable); the host resumed answers."""
    findings = failed("before the stall", [await call(c, "gemini-ask", {"prompt": "warm"})])
    pid = int(host_status(w).get("pid") or 0)
    os.kill(pid, signal.SIGSTOP)
    try:
        during = await call(c, "gemini-ask", {"prompt": "during"})
    finally:
        os.kill(pid, signal.SIGCONT)
    if not during.is_error or "host_unresponsive" not in during.text or INTERNAL in during.text:
        findings.append(f"during the stall: {during.text[:160]}")
    return findings + failed("after the stall", [await call(c, "gemini-ask", {"prompt": "after"})])


def stalled_figures(findings: list[str], left: list[str]) -> list[Figure]:
    return [
        zero(CATEGORY, "a stalled host not answered as host_unresponsive, or its next call failing", findings),
        zero(CATEGORY, "processes left after a stalled host", left),
    ]


async def stalled() -> list[Figure]:
    with world("host-stall", **ENV, GEMINI_RELAY_HOST_TIMEOUT=STALL_BOUND) as w:
        async with client(w) as c:
            findings = await stall(w, c)
        left = await left_running(w)
    return stalled_figures(findings, left)


async def idle_servers(w: World, stack: contextlib.AsyncExitStack, servers: int) -> tuple[float, list[str], Client]:
    """Servers that each ran a burst, then sit idle: (connections each keeps to its host, failed calls, the first)."""
    findings: list[str] = []
    opened: list[Client] = []
    for n in range(servers):
        opened.append(c := await stack.enter_async_context(client(w)))
        findings += failed(f"server {n}", await burst(c, 4, f"server {n}"))
    connections = 0
    with anyio.move_on_after(10):  # the host counts a connection closed once it reads its end
        while (connections := int(host_status(w).get("connections") or 0) - 1) > servers:
            await anyio.sleep(0.1)
    return connections / servers, findings, opened[0]


def starvation_figures(kept: float, findings: list[str], left: list[str]) -> list[Figure]:
    return [
        at_most(CATEGORY, "connections an idle server keeps to its host after a burst", kept, 1),
        zero(CATEGORY, "burst calls failing with idle servers around", findings),
        zero(CATEGORY, "processes left after the idle servers", left),
    ]


async def starvation(servers: int) -> list[Figure]:
    with world("host-starve", **ENV) as w:
        async with contextlib.AsyncExitStack() as stack:
            kept, findings, _ = await idle_servers(w, stack, servers)
        left = await left_running(w)
    return starvation_figures(kept, findings, left)


async def one_world(servers: int) -> list[Figure]:
    """Short: idle servers after bursts, then the first of them has its host killed after a burst, then stalled. The
    full run's figures of those three worlds, with one world's servers and hosts started once."""
    with world("host-loss", **ENV, GEMINI_RELAY_HOST_TIMEOUT=STALL_BOUND) as w:
        async with contextlib.AsyncExitStack() as stack:
            kept, idle, first = await idle_servers(w, stack, servers)
            kills = await kill_after_bursts(w, first, 1)
            stalls = await stall(w, first)
        left = await left_running(w)
    return [*killed_figures(1, kills, left), *stalled_figures(stalls, left), *starvation_figures(kept, idle, left)]


async def two_versions(calls: int) -> list[Figure]:
    """An older and a newer server on one state dir at a cap of 1, calling at once: one host in the end, never
    replaced by the older server, whose calls fail as host_superseded (or answer, before the newer one came)."""
    findings: list[str] = []
    hosts: set[int] = set()
    with world("host-versions", **ENV, GEMINI_RELAY_MAX_CONCURRENT="1") as w:
        site = w.relay.base / "older-relay"
        site.mkdir()
        (site / "sitecustomize.py").write_text(SITECUSTOMIZE, encoding="utf-8")
        older = {"PYTHONPATH": str(site), "RELAY_BENCH_VERSION": OLDER}
        async with client(w, **older) as old, client(w) as new:
            findings += failed("older, alone", [await call(old, "gemini-ask", {"prompt": "older first"})])
            answers: dict[str, list[Answer]] = {"older": [], "newer": []}

            async def ask(name: str, c: Client, n: int) -> None:
                answers[name].append(await call(c, "gemini-ask", {"prompt": f"[[fake:slow:0.2]] {name} {n}"}))
                hosts.add(int(host_status(w).get("pid") or 0))

            async with anyio.create_task_group() as tg:
                for n in range(calls):
                    tg.start_soon(ask, "newer", new, n)
                    tg.start_soon(ask, "older", old, n)
            findings += failed("newer", answers["newer"])
            findings += [f"older: {a.text[:120]}" for a in answers["older"]
                         if a.is_error and (INTERNAL in a.text or "host_superseded" not in a.text)]  # fmt: skip
            most = most_at_once(w)
            final = host_status(w)
            if final.get("version") != __version__:
                findings.append(f"the host serving at the end is {final.get('version')}, not the newer relay")
        left = await left_running(w)
    hosts.discard(0)
    return [
        at_most(CATEGORY, "two versions at a cap of 1: runs at once (from the jobs' admission and end times)", most, 1),
        zero(CATEGORY, "two versions: calls failing other than host_superseded (older) or at all (newer)", findings),
        at_most(CATEGORY, "two versions: hosts seen serving while both call at once", len(hosts), 1),
        zero(CATEGORY, "processes left after two versions", left),
    ]


def most_at_once(w: World) -> int:
    """The most runs of the world's store that ran at the same time (a run's end and the next one's start may be
    written a moment apart: EDGE of overlap is not counted)."""
    edges: list[tuple[float, int]] = []
    for job_id in w.store.job_ids():
        result, progress = w.store.result(job_id), w.store.progress(job_id)  # progress: from the run's admission
        if result is None or progress is None or progress.started_at is None:
            continue
        if result.ended_at - progress.started_at > EDGE:
            edges += [(progress.started_at, 1), (result.ended_at - EDGE, -1)]
    most = running = 0
    for _at, step in sorted(edges, key=lambda edge: (edge[0], edge[1])):
        running += step
        most = max(most, running)
    return most


async def attack(short: bool) -> list[Figure]:
    # Short: one round of each, the kill, stall and idle servers sharing one world; tests/host (test_host_connection,
    # test_host_versions) assert each case on its own.
    losses = await one_world(2) if short else [*await killed(10), *await stalled(), *await starvation(12)]
    return [
        *losses,
        *await idle_race(4 if short else 40),
        *await two_versions(1 if short else 8),
    ]
