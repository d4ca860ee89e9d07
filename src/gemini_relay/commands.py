"""Shell subcommands over the job store: `wait-job`, `hook-wait` (Claude Code asyncRewake bridge), `doctor`."""

from __future__ import annotations

import json
import re
import signal
import sys
import tempfile
import time
from collections.abc import Callable
from types import FrameType
from typing import TextIO

from gemini_relay.config import Settings
from gemini_relay.core.vocabulary import RunState
from gemini_relay.errors import RelayError
from gemini_relay.jobs.store.base import JobNotFound
from gemini_relay.jobs.store.files import FileJobStore
from gemini_relay.jobs.store.status import JobStatus, derive_status

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_TIMEOUT = 3
EXIT_INTERRUPTED = 130
HOOK_WAKE = 2  # Claude Code: exit 2 from an asyncRewake hook wakes the agent with stderr as the message
POLL = 0.2  # a shell waiter polls the store; there is no cross-process event to wait on
DEFAULT_HOOK_TIMEOUT = 3600.0
_JOB_ID = re.compile(r'"job_id"\s*:\s*"([A-Za-z0-9_-]{1,64})"')


class _Interrupted(Exception):
    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _raise_on_signals() -> None:
    def handler(signum: int, frame: FrameType | None) -> None:
        raise _Interrupted(signum)

    signal.signal(signal.SIGINT, handler)
    signal.signal(signal.SIGTERM, handler)


def _wait(store: FileJobStore, job_id: str, timeout: float | None, sleep: Callable[[float], None]) -> JobStatus:
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        status = derive_status(store, job_id)
        if status.state.terminal or (deadline is not None and time.monotonic() >= deadline):
            return status
        sleep(POLL)


def wait_job(job_id: str, timeout: float | None, *, out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> int:
    """Print done / failed / cancelled. Exit 0 terminal, 1 error, 3 timeout, 130 interrupted."""
    _raise_on_signals()
    try:
        store = FileJobStore(Settings.from_env().state_dir)
        status = _wait(store, job_id, timeout, time.sleep)
    except _Interrupted:
        print("interrupted", file=err)
        return EXIT_INTERRUPTED
    except (RelayError, OSError) as exc:
        print(f"gemini-relay wait-job: {exc}", file=err)
        return EXIT_ERROR
    if not status.state.terminal:
        print(status.state.value, file=out)
        return EXIT_TIMEOUT
    print(status.state.value, file=out)
    return EXIT_OK


def hook_wait(timeout: float, *, stdin: TextIO = sys.stdin, err: TextIO = sys.stderr) -> int:
    """Claude Code PostToolUse hook for gemini-run: wait for that job, then wake the agent (exit 2 + one line).

    Silent (exit 0) when the payload is not a gemini-run, or the result was already collected by gemini-status or
    gemini-wait. Timeout and SIGINT/SIGTERM each wake the agent with their own message.
    """
    try:
        payload = stdin.read()
    except OSError:
        return EXIT_OK
    job_id = _job_id(payload)
    if job_id is None:
        return EXIT_OK
    _raise_on_signals()
    try:
        store = FileJobStore(Settings.from_env().state_dir)
        status = _wait(store, job_id, timeout, time.sleep)
    except _Interrupted as exc:
        print(
            f"gemini-relay: stopped waiting for job {job_id} ({exc}); it keeps running. "
            f'Check it with gemini-status {{"jobId": "{job_id}"}}.',
            file=err,
        )
        return HOOK_WAKE
    except JobNotFound:
        return EXIT_OK
    except (RelayError, OSError) as exc:
        print(f"gemini-relay hook-wait: {exc}", file=err)
        return EXIT_ERROR
    if not status.state.terminal:
        print(
            f"gemini-relay: job {job_id} is still {status.state.value} after {timeout:g}s. "
            f'Collect it later with gemini-wait {{"jobId": "{job_id}"}}.',
            file=err,
        )
        return HOOK_WAKE
    if store.collected(job_id):
        return EXIT_OK
    outcome = status.state.value if status.state is not RunState.FAILED else f"failed ({status.failure_reason})"
    print(
        f"gemini-relay: job {job_id} finished: {outcome}. "
        f'Collect the result with gemini-status {{"jobId": "{job_id}"}}.',
        file=err,
    )
    return HOOK_WAKE


def _job_id(payload: str) -> str | None:
    """The job id in a PostToolUse payload for gemini-run (the tool's JSON reply sits inside tool_response)."""
    try:
        data = json.loads(payload)
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    tool = str(data.get("tool_name", ""))  # pyright: ignore[reportUnknownArgumentType, reportUnknownMemberType]
    if not tool.endswith("gemini-run"):
        return None
    response = json.dumps(data.get("tool_response"))  # pyright: ignore[reportUnknownMemberType]
    match = _JOB_ID.search(response.replace('\\"', '"'))
    return match.group(1) if match else None


def doctor_state(settings: Settings) -> tuple[list[str], list[str]]:
    """State-dir writability and stale jobs: report lines and problems, for `gemini-relay doctor`."""
    lines = ["## Job store", f"- state dir: {settings.state_dir}"]
    problems: list[str] = []
    try:
        store = FileJobStore(settings.state_dir)
        with tempfile.NamedTemporaryFile(dir=store.root, prefix=".doctor-"):
            pass
    except OSError as exc:
        return [*lines, f"- not writable: {exc.strerror}"], [f"Make {settings.state_dir} writable or set "
                                                             "GEMINI_RELAY_STATE_DIR."]  # fmt: skip
    lines.append("- writable: yes")
    states: dict[str, int] = {}
    stale: list[str] = []
    now = time.time()
    for job_id in store.job_ids():
        try:
            status = derive_status(store, job_id, now=now)
        except JobNotFound:
            continue
        states[status.state.value] = states.get(status.state.value, 0) + 1
        if status.state is RunState.QUEUED and now - status.created_at > 3600:
            stale.append(job_id)
    summary = ", ".join(f"{n} {state}" for state, n in sorted(states.items())) or "none"
    lines.append(f"- jobs: {summary}")
    if stale:
        lines.append(f"- stale queued jobs (over 1 h, never started): {', '.join(stale[:10])}")
        problems.append("Start a server to adopt or cancel the stale queued jobs (gemini-jobs, gemini-cancel).")
    return lines, problems
