"""cut-stream: the model's answer cut mid-stream, warm (the warm Gemini CLI over ACP) and cold (a CLI per call): the
stream ending without a finish reason (`cut:end`) and the connection reset (`cut:reset`). Every call fails as
backend_error, keeps the partial text, says whether it may be retried, and is never "internal error". Then a
finished job's status on a state dir gone read-only: answered from the record, never "internal error".
"""

from __future__ import annotations

import subprocess

from bench.kill9 import World
from bench.reliability.faults import _read_only
from bench.reliability.table import Figure, at_least, zero
from bench.reliability.world import Answer, call, left_running, state_dir, world
from tests.fakes.fake_gemini_api import CUT_TEXT

CATEGORY = "cut-stream"
INTERNAL = "internal error"
MODES = {
    "warm": {"GEMINI_RELAY_WARM": "on", "GEMINI_RELAY_WARM_MAX_RSS_MB": "4096"},
    "cold": {"GEMINI_RELAY_WARM": "off"},
}
CUTS = ("[[fake:cut:end]]", "[[fake:cut:reset]]")


def judged(label: str, answer: Answer) -> list[str]:
    data = answer.structured or {}
    bad = []
    if INTERNAL in answer.text.lower():
        bad.append(f"{label}: internal error: {answer.text[:160]!r}")
    if data.get("failure_reason") != "backend_error" or data.get("state") != "failed":
        bad.append(f"{label}: not a backend_error failure: {answer.text[:200]!r}")
    if CUT_TEXT not in str(data.get("result")) or data.get("partial") is not True:
        bad.append(f"{label}: the partial text is lost: {answer.text[:200]!r}")
    if data.get("retryable") is not True:
        bad.append(f"{label}: not retryable: {answer.text[:200]!r}")
    return bad


async def cuts(rounds: int) -> tuple[int, list[str], list[str]]:
    """Every cut of a mode started at once as jobs (the cold CLI retries a reset for a while), then each waited."""
    tried, bad, left = 0, [], []
    for mode, env in MODES.items():
        with world(f"cut-{mode}", GEMINI_RELAY_TOOLSETS="jobs", **env) as w:
            try:
                async with w.relay.client() as c:
                    jobs: dict[str, str] = {}
                    for n in range(rounds):
                        for cut in CUTS:
                            started = await call(c, "gemini-run", {"prompt": f"{cut} {mode} {n}"})
                            jobs[f"{mode} {cut} #{n}"] = str((started.structured or {}).get("job_id") or "")
                    for label, job in jobs.items():
                        bad += judged(label, await call(c, "gemini-wait", {"jobId": job, "wait": 110}))
                        tried += 1
            except Exception as exc:  # noqa: BLE001 - a hang or a dead server is the finding
                bad.append(f"{mode}: {exc!r}"[:200])
            left += await left_running(w)
    return tried, bad, left


async def read_only_status(w: World) -> list[str]:
    """A job run to its end; then the state dir is made read-only and a new server reads the job back."""
    async with w.relay.client() as c:
        started = await call(c, "gemini-run", {"prompt": "a job to read back"})
        job = str((started.structured or {}).get("job_id") or "")
        if not job:
            return [f"gemini-run answered no job: {started.text[:160]!r}"]
        done = await call(c, "gemini-wait", {"jobId": job, "wait": 60})
        if (done.structured or {}).get("state") != "done":
            return [f"the job did not end done: {done.text[:160]!r}"]
    state = state_dir(w)
    _read_only(state)
    bad: list[str] = []
    try:
        async with w.relay.client() as c:
            for tool in ("gemini-status", "gemini-wait"):
                answer = await call(c, tool, {"jobId": job, **({"wait": 5} if tool == "gemini-wait" else {})})
                if INTERNAL in answer.text.lower() or (answer.structured or {}).get("state") != "done":
                    bad.append(f"{tool} of a finished job on a read-only state dir: {answer.text[:200]!r}")
    finally:
        subprocess.run(["umount", "-l", str(state)], capture_output=True, check=False)
    return bad


async def read_only(w: World) -> list[str]:
    w.relay.env["GEMINI_RELAY_HOST"] = "off"  # a host would hold the state dir's files open for writing
    try:
        return await read_only_status(w)
    except Exception as exc:  # noqa: BLE001 - a hang or a dead server is the finding
        return [f"{exc!r}"[:200] + f"; server log: {w.relay.stderr().strip().splitlines()[-1][-160:]}"]


async def attack(short: bool) -> list[Figure]:
    rounds = 1 if short else 5
    tried, bad, left = await cuts(rounds)
    figures = [
        at_least(
            CATEGORY, "answers cut mid-stream (end, reset) × (warm, cold)", tried, len(CUTS) * len(MODES) * rounds
        ),
        zero(CATEGORY, "cut answers not failed backend_error, partial and retryable, or internal error", bad),
    ]
    if not short:  # the full run only: the short one stays within the suite's time
        with world("cut-readonly", GEMINI_RELAY_TOOLSETS="jobs", GEMINI_MCP_BACKEND="api") as w:
            readonly = await read_only(w)
            left += await left_running(w)
        figures.append(
            zero(CATEGORY, "a finished job's status / wait on a read-only state dir: wrong or failed", readonly)
        )
    return [*figures, zero(CATEGORY, "processes left (cut streams, read-only state)", left)]
