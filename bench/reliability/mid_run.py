"""files-midrun: the state dir fails a job while it runs in the shared relay host.

A job's directory is removed while it streams, beside another server's run in the same host; then the host's disk
fills mid-run (RLIMIT_FSIZE set on the host process from outside: every write that would grow a file fails, as on a
full disk; CPython ignores SIGXFSZ). The host must survive both, the bystander run must end done, the failed job's
caller must get a classified failure with its partial text (never "internal error"), and once the disk has room
again the job's end must be recorded.
"""

from __future__ import annotations

import contextlib
import resource
import shutil
from pathlib import Path

import anyio

from bench.kill9 import World, processes_of
from bench.reliability.table import Figure, zero
from bench.reliability.world import Answer, call, left_running, state_dir, world
from tests.harness import is_host_cmdline

CATEGORY = "files-midrun"
SLOW = "[[fake:slow:0.4]]"  # five chunks 0.4 s apart: the run is mid-stream for about two seconds
BOUND = 90.0  # a wait on the host (its cold start included) on a loaded 2-core machine; past it, a finding


def host_pid(w: World) -> int | None:
    for pid in processes_of(w.relay.base):
        with contextlib.suppress(OSError):
            if is_host_cmdline(Path(f"/proc/{pid}/cmdline").read_bytes()):
                return pid
    return None


class Stuck(Exception):
    """A wait of the attack passed its bound: the finding, named."""


async def streaming(w: World, job: str) -> None:
    """Until the job's first chunk is on disk (its out.txt has text)."""
    out = state_dir(w) / "jobs" / job / "out.txt"
    with anyio.move_on_after(BOUND):
        while not (out.is_file() and out.stat().st_size):
            await anyio.sleep(0.02)
        return
    raise Stuck(f"job {job} streamed nothing within {BOUND:g}s")


def job_dirs(jobs: Path) -> set[Path]:
    """The jobs in the store: a hidden entry is one still being built (FileJobStore.create), renamed once whole."""
    return {p for p in jobs.iterdir() if not p.name.startswith(".")} if jobs.is_dir() else set()


def job_of(answer: Answer) -> str:
    return str((answer.structured or {}).get("job_id") or "")


def internal(label: str, answer: Answer) -> list[str]:
    return [f"{label}: {answer.text[:160]!r}"] if "internal error" in answer.text.lower() else []


async def removed_mid_run(w: World) -> list[str]:
    bad: list[str] = []
    async with w.relay.client() as one, w.relay.client() as other:
        a = job_of(await call(one, "gemini-run", {"prompt": f"{SLOW} removed"}))
        b = job_of(await call(other, "gemini-run", {"prompt": f"{SLOW} bystander"}))
        if not a or not b:
            return [f"gemini-run answered no job ids ({a!r}, {b!r})"]
        try:
            await streaming(w, a)
        except Stuck as exc:
            return [str(exc)]
        host = host_pid(w)
        shutil.rmtree(state_dir(w) / "jobs" / a)
        waited = await call(one, "gemini-wait", {"jobId": a, "wait": BOUND})
        bystander = await call(other, "gemini-wait", {"jobId": b, "wait": BOUND})
        after = await call(one, "gemini-ask", {"prompt": "after the removal"})
        bad += internal("gemini-wait of the removed job", waited)
        if (bystander.structured or {}).get("state") != "done":
            bad.append(f"the bystander run ended {bystander.text[:160]!r}")
        if after.is_error:
            bad.append(f"the next run after the removal: {after.text[:160]!r}")
        if host is None or host_pid(w) != host:
            bad.append(f"the relay host {host} did not survive (now {host_pid(w)})")
    return bad


async def full_mid_run(w: World) -> list[str]:
    bad: list[str] = []
    async with w.relay.client() as client, anyio.create_task_group() as tg:
        asked: list[Answer] = []

        async def ask() -> None:
            asked.append(await call(client, "gemini-ask", {"prompt": f"{SLOW} disk fills"}))

        jobs = state_dir(w) / "jobs"
        before = job_dirs(jobs)
        tg.start_soon(ask)
        with anyio.move_on_after(BOUND):
            while not (new := job_dirs(jobs) - before):
                await anyio.sleep(0.02)
        host = host_pid(w)
        if not new or host is None:
            tg.cancel_scope.cancel()
            return [f"no job was created in a relay host ({host}) within {BOUND:g}s"]
        job = next(iter(new)).name
        try:
            await streaming(w, job)
        except Stuck as exc:
            tg.cancel_scope.cancel()
            return [str(exc)]
        _, hard = resource.prlimit(host, resource.RLIMIT_FSIZE)
        resource.prlimit(host, resource.RLIMIT_FSIZE, (0, hard))
        try:
            with anyio.move_on_after(BOUND):
                while not asked:
                    await anyio.sleep(0.02)
            if not asked:
                tg.cancel_scope.cancel()
                return [f"gemini-ask on a full disk did not answer within {BOUND:g}s"]
            during = await call(client, "gemini-status", {"jobId": job})
        finally:
            resource.prlimit(host, resource.RLIMIT_FSIZE, (hard, hard))
        answer = asked[0]
        bad += internal("gemini-ask on a full disk", answer) + internal("gemini-status on a full disk", during)
        if not answer.is_error or "refused the job's record" not in answer.text or "slow chunk 1" not in answer.text:
            bad.append(f"gemini-ask on a full disk: not the classified failure with its text: {answer.text[:200]!r}")
        recorded = await call(client, "gemini-wait", {"jobId": job, "wait": 10})
        if (recorded.structured or {}).get("failure_reason") != "store_unwritable":
            bad.append(f"the job's end was not recorded once the disk had room: {recorded.text[:160]!r}")
        if host_pid(w) != host:
            bad.append(f"the relay host {host} did not survive the full disk")
    return bad


async def attack(short: bool) -> list[Figure]:
    with world("midrun", GEMINI_RELAY_TOOLSETS="jobs", GEMINI_MCP_BACKEND="api", GEMINI_RELAY_HOST="on") as w:
        removed = await removed_mid_run(w)
        full = await full_mid_run(w)
        left = await left_running(w)
    return [
        zero(CATEGORY, "a job dir removed mid-run: host, bystander or caller harmed", removed),
        zero(CATEGORY, "disk full mid-run (host RLIMIT_FSIZE): unclassified, host died or never recorded", full),
        zero(CATEGORY, "processes left (state dir failing mid-run)", left),
    ]
