"""kill -9 of the MCP server at several points of a durable job's life; a fresh server must collect the whole result.

For each kill point × run: start a server (GEMINI_RELAY_TOOLSETS=jobs) over stdio with the official MCP client, start
a slow job with gemini-run, SIGKILL the server at that point, start a fresh server and collect the job with
gemini-wait until it is terminal (bounded). The result is lost unless it is `done` with exactly the emulator's whole
answer, and the stored result still says so once every supervisor of the job has ended. Kill points:

- queued: GEMINI_RELAY_MAX_CONCURRENT=1 and another job holds the slot, so the target has no supervisor yet (the
  next server adopts it: see Deps.maintain / adopt);
- starting: right after gemini-run answers (the supervisor may not even be spawned yet);
- spawned: as soon as the job's CLI has been spawned by the relay host (its executor: no process per job);
- recorded: as soon as the supervisor has recorded itself (supervisor.json), before any text;
- streaming: once the job's out.txt holds text;
- finishing: once out.txt holds the whole answer (the emulator has sent its last chunk; the result is imminent).

Afterwards every process whose environment names this run's temp dir must end (bounded wait); those left are
orphans. Everything runs against the local Gemini API emulator and the pinned Gemini CLI, in a temp HOME and state
dir. Run: `.venv/bin/python -m bench.kill9 [--runs M]`. Exits non-zero when a result is lost, a job ran twice or a
process is left.

Opt-in point `stalled` (`--points stalled`): like `spawned`, but the supervisor is SIGSTOPped before it records
itself (a slow start on a loaded machine) and resumed once the fresh server had its chance to adopt the job as
queued; it checks that a job never gets two supervisors.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp import Client

from gemini_relay.jobs.store.file_store import ERR, OUT, SUPERVISOR, FileJobStore
from gemini_relay.jobs.store.job_status import derive_status
from gemini_relay.jobs.store.job_store import JobNotFound
from tests.fakes.fake_gemini_api import SLOW_CHUNKS, FakeGeminiApi, latest_user_text
from tests.fakes.gemini_home import REPO_GEMINI_CLI, isolated_cli_env
from tests.harness import TEST_MODEL, Relay
from tests.procs import live_processes

POINTS = ("queued", "starting", "spawned", "recorded", "streaming", "finishing")
EXTRA_POINTS = ("stalled",)
SLOW_DELAY = 0.3  # seconds between the emulator's 5 chunks: a run streams for ~1.2 s after the CLI starts
EXPECTED = "".join(SLOW_CHUNKS)
TERMINAL = frozenset({"done", "failed", "cancelled"})
POINT_BOUND = 90.0  # reaching a kill point: a cold CLI on a 2-core machine under the whole suite is slow to stream
KILL_BOUND = 10.0  # the dead server's connection failing
COLLECT_BOUND = 90.0  # a fresh server collecting the job
ORPHAN_BOUND = 20.0  # processes of the run ending after the last server closed
ADOPT_WINDOW = 5.0  # stalled: how long a fresh server gets to (wrongly) start a second supervisor
POLL = 0.01


@dataclass
class Trial:
    point: str
    run: int
    job_id: str = ""
    at_kill: str = ""  # the job's derived state (+ streamed characters) at the moment of the kill
    state: str = ""
    result: str = ""
    upstream_requests: int = 0
    adopted: bool = False  # the fresh server adopted it as a queued job of a dead server
    results_written: int = 0  # supervisors that wrote a result for the job (more than one: it ran twice)
    stopped: list[int] = field(default_factory=list[int])  # stalled: the SIGSTOPped supervisor
    final: str = ""  # the stored result once every supervisor of the job has ended: must not change after collection
    error: str = ""

    @property
    def lost(self) -> bool:
        return self.state != "done" or self.result != EXPECTED or self.final != f"done:{EXPECTED}"


@dataclass
class World:
    relay: Relay
    store: FileJobStore
    trials: list[Trial] = field(default_factory=list[Trial])

    def job_dir(self, job_id: str) -> Path:
        return self.store.dir(job_id)


def text_of(result: types.CallToolResult) -> str:
    return "".join(block.text for block in result.content if isinstance(block, types.TextContent))


async def call_json(client: Client, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(tool, args)
    if result.is_error:
        raise RuntimeError(f"{tool} failed: {text_of(result)}")
    data: dict[str, Any] | None = result.structured_content  # the job's fields; the text is Markdown for a person
    if data is None:
        raise RuntimeError(f"{tool} answered without structured content: {text_of(result)[:200]}")
    return data


def _cmdline(pid: int) -> list[bytes]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return []


def _ppid(pid: int) -> int | None:
    try:
        return int(Path(f"/proc/{pid}/stat").read_bytes().rpartition(b")")[2].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def processes_of(base: Path) -> list[int]:
    """Live (non-zombie) processes, other than this one, whose environment names the run's temp dir."""
    marker = str(base).encode() + b"/"
    return [pid for pid, _, _ in live_processes(marker)]


def server_pids(world: World) -> list[int]:
    """This script's relay servers (its direct children running gemini_relay)."""
    return [
        pid for pid in processes_of(world.relay.base) if _ppid(pid) == os.getpid() and b"gemini_relay" in _cmdline(pid)
    ]


def supervisor_pids(world: World, job_id: str) -> list[int]:
    """The live executor of this job: the relay host recorded in its supervisor.json (written at admission)."""
    try:
        pid = int(json.loads((world.job_dir(job_id) / SUPERVISOR).read_text(encoding="utf-8"))["pid"])
    except (OSError, ValueError, KeyError):
        return []
    return [pid] if pid in processes_of(world.relay.base) else []


def _cli_pid(world: World, job_id: str) -> int | None:
    """The pid of the job's CLI as its progress record names it (the relay host writes it once spawned)."""
    try:
        progress = world.store.progress(job_id)
    except (JobNotFound, OSError, ValueError):
        return None
    return progress.cli_pid if progress is not None else None


def cli_spawned(world: World, job_id: str) -> bool:
    """The job's CLI has been spawned."""
    return _cli_pid(world, job_id) is not None


def cli_pids(world: World, job_id: str) -> list[int]:
    """The job's CLI while it lives."""
    pid = _cli_pid(world, job_id)
    return [pid] if pid is not None and pid in processes_of(world.relay.base) else []


async def poll_until(check: Callable[[], bool], bound: float, what: str) -> None:
    """Bounded polling of files and /proc, where no event exists to wait on."""
    try:
        with anyio.fail_after(bound):
            while not check():
                await anyio.sleep(POLL)
    except TimeoutError:
        raise RuntimeError(f"no {what} after {bound:g}s") from None


def out_text(world: World, job_id: str) -> str:
    try:
        return (world.job_dir(job_id) / OUT).read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return ""


def snapshot(world: World, job_id: str) -> str:
    status = derive_status(world.store, job_id)
    return f"{status.state.value}+{len(out_text(world, job_id))}ch"


async def reach(world: World, trial: Trial) -> None:
    """Return as soon as the job is at the trial's kill point."""
    job = trial.job_id
    if trial.point == "queued":
        if (world.job_dir(job) / SUPERVISOR).exists():
            raise RuntimeError("the target job was not queued: it already has a supervisor")
    elif trial.point == "spawned":
        # With the relay host there is no supervisor process per job: its nearest point is the CLI just spawned.
        spawned = lambda: bool(supervisor_pids(world, job)) or cli_spawned(world, job)  # noqa: E731
        await poll_until(spawned, POINT_BOUND, "supervisor process or CLI")
    elif trial.point == "stalled":
        await poll_until(lambda: bool(supervisor_pids(world, job)), POINT_BOUND, "supervisor process")
        trial.stopped = supervisor_pids(world, job)
        for pid in trial.stopped:
            os.kill(pid, signal.SIGSTOP)
    elif trial.point == "recorded":
        await poll_until((world.job_dir(job) / SUPERVISOR).exists, POINT_BOUND, "supervisor record")
    elif trial.point == "streaming":
        await poll_until(lambda: bool(out_text(world, job)), POINT_BOUND, "text")
    elif trial.point == "finishing":
        await poll_until(lambda: out_text(world, job) == EXPECTED, POINT_BOUND, "whole text")


async def start_and_kill(world: World, trial: Trial) -> None:
    prompt = f"[[fake:slow:{SLOW_DELAY}]] kill9 {trial.point} {trial.run}"
    overrides = {"GEMINI_RELAY_MAX_CONCURRENT": "1"} if trial.point == "queued" else {}
    killed = False
    try:
        async with world.relay.client(**overrides) as client:
            if trial.point == "queued":  # occupy the only slot, so the target waits in the queue
                blocker = await call_json(client, "gemini-run", {"prompt": f"[[fake:slow:{SLOW_DELAY}]] blocker"})
                supervisor = world.job_dir(blocker["job_id"]) / SUPERVISOR
                await poll_until(supervisor.exists, POINT_BOUND, "blocker supervisor")
            started = await call_json(client, "gemini-run", {"prompt": prompt})
            trial.job_id = started["job_id"]
            await reach(world, trial)
            trial.at_kill = snapshot(world, trial.job_id)
            servers = server_pids(world)
            if len(servers) != 1:
                raise RuntimeError(f"expected one server process, found {servers}")
            os.kill(servers[0], signal.SIGKILL)
            killed = True
            with anyio.fail_after(KILL_BOUND):
                await client.call_tool("gemini-ping", {})  # the connection is dead: this raises
            trial.error = "the server answered after kill -9"
    except Exception as exc:  # noqa: BLE001 - the dead connection surfaces in several shapes
        if not killed:
            trial.error = f"before the kill: {exc!r}"


async def resume_stalled(world: World, trial: Trial) -> None:
    """Give the fresh server its chance to start a second supervisor (there is no event for "it did not"), then
    let the stalled one go on."""
    with anyio.move_on_after(ADOPT_WINDOW):
        while len(supervisor_pids(world, trial.job_id)) < 2:
            await anyio.sleep(POLL)
    resume(trial)


def resume(trial: Trial) -> None:
    for pid in trial.stopped:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGCONT)
    trial.stopped = []


async def collect(world: World, trial: Trial) -> None:
    async with world.relay.client() as client:
        if trial.stopped:
            await resume_stalled(world, trial)
        with anyio.fail_after(COLLECT_BOUND):
            while True:
                data = await call_json(client, "gemini-wait", {"jobId": trial.job_id, "wait": 30})
                if data["state"] in TERMINAL:
                    break
    trial.state = data["state"]
    trial.result = data.get("result") or ""
    if trial.state != "done":
        trial.error = f"{data.get('failure_reason')}: {data.get('error')}"


def count_upstream(world: World, trial: Trial) -> int:
    needle = f"kill9 {trial.point} {trial.run}"
    return sum(1 for r in world.relay.api.requests if r.kind == "main" and needle in latest_user_text(r.body or {}))


def count_results_written(world: World, trial: Trial) -> int:
    try:
        log = (world.job_dir(trial.job_id) / ERR).read_text(encoding="utf-8", errors="replace")
    except (FileNotFoundError, JobNotFound):
        return 0
    return log.count(f"Job {trial.job_id} finished ")


async def run_trial(world: World, trial: Trial) -> None:
    try:
        await start_and_kill(world, trial)
        if trial.job_id and not trial.error:
            await collect(world, trial)
    except Exception as exc:  # noqa: BLE001 - a trial that breaks counts as lost, with its reason
        trial.error = trial.error or repr(exc)
    finally:
        resume(trial)
    if trial.job_id:  # the job's CLI has ended by now (or is reported as an orphan); the host outlives its jobs
        with contextlib.suppress(RuntimeError):
            await poll_until(lambda: not cli_pids(world, trial.job_id), ORPHAN_BOUND, "the job's CLI exit")
        trial.results_written = count_results_written(world, trial)
        with contextlib.suppress(JobNotFound):
            stored = world.store.result(trial.job_id)
            trial.final = f"{stored.state.value}:{stored.result.text}" if stored else "none"
    trial.upstream_requests = count_upstream(world, trial)
    trial.adopted = bool(trial.job_id) and f"Adopting queued job {trial.job_id}" in world.relay.stderr()


async def orphans_after(world: World) -> list[int]:
    with anyio.move_on_after(ORPHAN_BOUND):
        while processes_of(world.relay.base):
            await anyio.sleep(0.05)
    return processes_of(world.relay.base)


def make_world(base: Path, api: FakeGeminiApi) -> World:
    project = base / "proj"
    project.mkdir()
    state = base / "state"
    cli_env = isolated_cli_env(base, api.base_url)
    env = {
        "PATH": cli_env["PATH"],
        "LANG": "C.UTF-8",
        **cli_env,
        "GEMINI_CLI_PATH": str(REPO_GEMINI_CLI),
        "GEMINI_RELAY_PROJECT_ROOT": str(project),
        "GEMINI_RELAY_STATE_DIR": str(state),
        "GEMINI_RELAY_TOOLSETS": "jobs",
        "GEMINI_MCP_BACKEND": "gemini",
        "GEMINI_DEFAULT_MODEL": TEST_MODEL,
        "GEMINI_RELAY_KILL_GRACE": "2",
        "GEMINI_RELAY_WARM": "off",  # these trials check the cold CLI's process contract (kill points, fakes)
    }
    relay = Relay(base, project, Path(cli_env["GEMINI_CLI_HOME"]), api, env, base / "server-stderr.log")
    return World(relay=relay, store=FileJobStore(state))


def report(world: World, runs: int, points: tuple[str, ...], orphans: list[int], elapsed: float) -> int:
    by_point: dict[str, Counter[str]] = {p: Counter() for p in points}
    lost = sum(t.lost for t in world.trials)
    for trial in world.trials:
        by_point[trial.point][trial.at_kill.split("+")[0] or "?"] += 1
    for point in points:
        trials = [t for t in world.trials if t.point == point]
        lost_here = sum(t.lost for t in trials)
        doubled = sum(t.results_written > 1 for t in trials)
        adopted = sum(t.adopted for t in trials)
        states = ", ".join(f"{s}×{n}" for s, n in sorted(by_point[point].items()))
        print(
            f"  {point:<10} lost {lost_here}/{len(trials)}   state at kill: {states:<14} "
            f"adopted by the next server: {adopted}   ran twice: {doubled}"
        )
    for trial in world.trials:
        if trial.lost or trial.results_written != 1 or trial.upstream_requests != 1:
            print(f"  ! {trial.point} #{trial.run} job {trial.job_id or '-'} at kill {trial.at_kill or '-'}: "
                  f"{trial.state or 'no result'} {trial.result[:60]!r} upstream={trial.upstream_requests} "
                  f"results written={trial.results_written} final={trial.final[:30]!r} "
                  f"{trial.error}")  # fmt: skip
    for pid in orphans:
        print(f"  ! left running: pid {pid}: {b' '.join(_cmdline(pid))[:160].decode(errors='replace')}")
    print(f"({elapsed:.0f}s)")
    print(f"kill -9 at {len(points)} points × {runs} runs: results lost = {lost}")
    print(f"orphans after all tests = {len(orphans)}")
    twice = sum(t.results_written > 1 for t in world.trials)
    return 1 if lost or orphans or twice else 0


async def main_async(runs: int, points: tuple[str, ...]) -> int:
    if not REPO_GEMINI_CLI.exists():
        print(f"the pinned Gemini CLI is not installed at {REPO_GEMINI_CLI}; run scripts/test first", file=sys.stderr)
        return 2
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="relay-kill9-") as tmp, FakeGeminiApi() as api:
        world = make_world(Path(tmp), api)
        for run in range(1, runs + 1):
            for point in points:
                trial = Trial(point=point, run=run)
                world.trials.append(trial)
                await run_trial(world, trial)
                print(f"  {point:<10} #{run}: {'LOST' if trial.lost else 'ok'} (at kill {trial.at_kill})", flush=True)
        orphans = await orphans_after(world)
        code = report(world, runs, points, orphans, time.monotonic() - started)
        for pid in orphans:  # leave nothing behind, even when reporting a failure
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    return code


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=4, help="runs per kill point (default 4)")
    parser.add_argument(
        "--points", default=",".join(POINTS), help=f"comma-separated, from {','.join(POINTS + EXTRA_POINTS)}"
    )
    args = parser.parse_args(argv)
    points = tuple(p for p in args.points.split(",") if p)
    unknown = set(points) - set(POINTS) - set(EXTRA_POINTS)
    if unknown or args.runs < 1:
        parser.error(f"unknown points {sorted(unknown)}" if unknown else "--runs must be at least 1")
    return anyio.run(main_async, args.runs, points)


if __name__ == "__main__":
    sys.exit(main())
