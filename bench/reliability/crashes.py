"""crashes: kill -9 of the server (bench.kill9's six points), of a job's supervisor and of its CLI.

A killed server's job is collected whole by a fresh server (kill9's trial). A killed supervisor or CLI cannot finish
its answer, so its job must end — reported terminal within a bound by the same, still-running server, with the text
it streamed kept (a prefix of the answer) — and run at most once upstream, leaving no process behind.
"""

from __future__ import annotations

import contextlib
import os
import signal
from dataclasses import dataclass

import anyio

from bench import kill9
from bench.kill9 import EXPECTED, POINTS, SLOW_DELAY, TERMINAL, Trial, World, call_json
from bench.reliability.table import Figure, zero
from bench.reliability.world import left_running, world
from gemini_relay.jobs.store.file_store import SUPERVISOR
from tests.fakes.fake_gemini_api import latest_user_text

CATEGORY = "crashes"
SUPERVISOR_POINTS = ("spawned", "recorded", "streaming", "finishing")
CLI_POINTS = ("cli-started", "streaming", "finishing")
END_BOUND = 30.0  # a job whose supervisor or CLI died being reported terminal


@dataclass
class Kill:
    target: str  # "supervisor" or "cli"
    point: str
    run: int
    job_id: str = ""
    state: str = ""
    text: str = ""
    upstream: int = 0
    error: str = ""

    @property
    def label(self) -> str:
        return f"{self.target} kill -9 at {self.point} #{self.run} (job {self.job_id or '-'})"


def cli_pids(w: World, supervisors: list[int]) -> list[int]:
    """The CLI processes of a job: children of its supervisor (the CLI runs in its own process group)."""
    return [pid for pid in kill9.processes_of(w.relay.base) if kill9._ppid(pid) in supervisors]


async def reach(w: World, kill: Kill) -> list[int]:
    """Wait for the kill point; return the pids to SIGKILL."""
    job = kill.job_id
    await kill9.poll_until(lambda: bool(kill9.supervisor_pids(w, job)), kill9.POINT_BOUND, "supervisor process")
    sup = kill9.supervisor_pids(w, job)
    if kill.point == "recorded":
        await kill9.poll_until((w.job_dir(job) / SUPERVISOR).exists, kill9.POINT_BOUND, "supervisor record")
    elif kill.point == "streaming":
        await kill9.poll_until(lambda: bool(kill9.out_text(w, job)), kill9.POINT_BOUND, "text")
    elif kill.point == "finishing":
        await kill9.poll_until(lambda: kill9.out_text(w, job) == EXPECTED, kill9.POINT_BOUND, "whole text")
    if kill.target == "supervisor":
        return sup
    await kill9.poll_until(lambda: bool(cli_pids(w, sup)), kill9.POINT_BOUND, "CLI process")
    return cli_pids(w, sup)


async def run_kill(w: World, kill: Kill) -> None:
    prompt = f"[[fake:slow:{SLOW_DELAY}]] kill9 {kill.target} {kill.point} {kill.run}"
    try:
        async with w.relay.client() as client:
            started = await call_json(client, "gemini-run", {"prompt": prompt})
            kill.job_id = started["job_id"]
            for pid in await reach(w, kill):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            with anyio.fail_after(END_BOUND):
                while True:
                    data = await call_json(client, "gemini-wait", {"jobId": kill.job_id, "wait": 30})
                    kill.state = data["state"]
                    if data["state"] in TERMINAL:
                        break
            kill.state = data["state"]
            kill.text = data.get("result") or data.get("partial_result") or ""
    except Exception as exc:  # noqa: BLE001 - a broken trial is a finding, with its reason
        timed_out = isinstance(exc, TimeoutError) or (
            isinstance(exc, BaseExceptionGroup) and exc.subgroup(TimeoutError) is not None
        )
        kill.error = f"still {kill.state or 'unknown'} {END_BOUND:g}s after the kill" if timed_out else repr(exc)
    needle = f"kill9 {kill.target} {kill.point} {kill.run}"
    kill.upstream = sum(
        1 for r in w.relay.api.requests if r.kind == "main" and needle in latest_user_text(r.body or {})
    )


async def server_kills(runs: int, points: tuple[str, ...]) -> list[Figure]:
    """bench.kill9's trial: kill -9 of the server; a fresh server must collect the whole answer."""
    lost: list[str] = []
    twice: list[str] = []
    with world("crash-server", GEMINI_RELAY_TOOLSETS="jobs") as w:
        for run in range(1, runs + 1):
            for point in points:
                trial = Trial(point=point, run=run)
                w.trials.append(trial)
                await kill9.run_trial(w, trial)
                label = f"server kill -9 at {point} #{run} (job {trial.job_id or '-'})"
                if trial.lost:
                    lost.append(f"{label}: {trial.state or 'no result'} {trial.result[:40]!r} {trial.error}")
                if trial.results_written > 1 or trial.upstream_requests > 1:
                    twice.append(f"{label}: {trial.results_written} results, {trial.upstream_requests} upstream")
        left = await left_running(w)
    return [
        Figure(CATEGORY, "server kill -9 trials", runs * len(points), f"{len(points)} points × {runs}", True),
        zero(CATEGORY, "results lost (server killed)", lost),
        zero(CATEGORY, "runs executed twice (server killed)", twice),
        zero(CATEGORY, "processes left (server killed)", left),
    ]


async def child_kills(runs: int, sup_points: tuple[str, ...], cli_points: tuple[str, ...]) -> list[Figure]:
    """kill -9 of a job's supervisor or CLI under a live server: the job must end, reported, its text kept."""
    lost: list[str] = []
    twice: list[str] = []
    # The supervisor is the job's executor: the relay host (killing it interrupts every run in it).
    with world("crash-child", GEMINI_RELAY_TOOLSETS="jobs") as w:
        kills = [Kill(t, p, r) for r in range(1, runs + 1) for t, ps in (("supervisor", sup_points),
                 ("cli", cli_points)) for p in ps]  # fmt: skip
        for kill in kills:
            await run_kill(w, kill)
            if kill.error or kill.state not in TERMINAL or not EXPECTED.startswith(kill.text):
                lost.append(f"{kill.label}: state {kill.state or '-'} text {kill.text[:40]!r} {kill.error}")
            if kill.upstream > 1:
                twice.append(f"{kill.label}: {kill.upstream} upstream requests")
        left = await left_running(w)
    points = len(sup_points) + len(cli_points)
    return [
        Figure(CATEGORY, "supervisor / CLI kill -9 trials", len(kills), f"{points} points × {runs}", True),
        zero(CATEGORY, "jobs not ended and reported (supervisor or CLI killed)", lost),
        zero(CATEGORY, "runs executed twice (supervisor or CLI killed)", twice),
        zero(CATEGORY, "processes left (supervisor or CLI killed)", left),
    ]


def runs_for(short: bool) -> int:
    return 1 if short else 20


def server_points(short: bool) -> tuple[str, ...]:
    return ("streaming",) if short else POINTS


def child_points(short: bool) -> tuple[tuple[str, ...], tuple[str, ...]]:
    return (("streaming",), ("streaming",)) if short else (SUPERVISOR_POINTS, CLI_POINTS)
