"""Shell subcommands over the job store: `wait-job`, `hook-wait` (Claude Code asyncRewake bridge), `doctor`."""

from __future__ import annotations

import json
import os
import re
import signal
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import TextIO

from gemini_relay.config import Settings
from gemini_relay.core.vocabulary import RunState
from gemini_relay.errors import RelayError
from gemini_relay.jobs.store.file_store import FileJobStore
from gemini_relay.jobs.store.job_status import JobStatus, derive_status
from gemini_relay.jobs.store.job_store import JobNotFound
from gemini_relay.streams.framing import parse_json_line

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_TIMEOUT = 3
EXIT_INTERRUPTED = 130
HOOK_WAKE = 2  # Claude Code: exit 2 from an asyncRewake hook wakes the agent with stderr as the message
POLL = 0.2  # a shell waiter polls the store; there is no cross-process event to wait on
DEFAULT_HOOK_TIMEOUT = 3600.0
MARKER_GRACE = 1.0  # gemini-wait / gemini-status write `collected` as they answer: a moment after the job ends
MARKER_POLL = 0.25
# Created once the signal handlers are in place, so a parent can interrupt a wait knowing it is caught.
READY_FILE_VARS = ("GEMINI_RELAY_WAIT_READY_FILE", "AGY_MCP_WAIT_READY_FILE")  # the relay's name, then agy-mcp's
_AGENT = re.compile(r"[\w.:-]{1,64}")  # a subagent's name as the wake shows it; anything else is left out
_JOB_ID = re.compile(r'"job_id"\s*:\s*"([A-Za-z0-9_-]{1,64})"')


class _Interrupted(Exception):
    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _raise_on_signals(err: TextIO | None) -> None:
    """Install the SIGINT/SIGTERM handlers, then say so through the ready file when one is asked for."""

    def handler(signum: int, frame: FrameType | None) -> None:
        raise _Interrupted(signum)

    signal.signal(signal.SIGINT, handler)
    signal.signal(signal.SIGTERM, handler)
    _signal_ready(err)


def _signal_ready(err: TextIO | None) -> None:
    """Create the ready file (GEMINI_RELAY_WAIT_READY_FILE, or agy-mcp's AGY_MCP_WAIT_READY_FILE). Its existence is
    the whole signal, so it must be absolute and new: an existing file is refused, never overwritten, and the wait
    goes on without the handshake (said on stderr by wait-job; hook-wait's stderr is the wake message)."""
    path = next((os.environ[name] for name in READY_FILE_VARS if os.environ.get(name)), None)
    if path is None:
        return
    try:
        if not Path(path).is_absolute():
            raise ValueError(f"the ready file {path!r} is not an absolute path")
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except (OSError, ValueError) as exc:
        if err is not None:
            print(f"gemini-relay: no ready file: {getattr(exc, 'strerror', None) or exc} ({path})", file=err)


def _wait(store: FileJobStore, job_id: str, timeout: float | None, sleep: Callable[[float], None]) -> JobStatus:
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        status = derive_status(store, job_id)
        if status.state.terminal or (deadline is not None and time.monotonic() >= deadline):
            return status
        sleep(POLL)


def wait_job(job_id: str, timeout: float | None, *, out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> int:
    """Print done / failed / cancelled. Exit 0 terminal, 1 error, 3 timeout, 130 interrupted."""
    _raise_on_signals(err)
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

    Silent (exit 0) when the payload is not a gemini-run, the result was already collected by gemini-status or
    gemini-wait (or a gemini-run `wait`), the job was stopped by gemini-cancel and ended cancelled, or on any error of
    its own: a hook never disrupts the call it observes. Timeout and SIGINT/SIGTERM each wake with their own message.
    """
    try:
        payload = stdin.read()
    except (OSError, ValueError):
        return EXIT_OK
    found = _hook_payload(payload)
    if found is None:
        return EXIT_OK
    job_id, agent = found
    job = f"job {job_id}" + (f" (started by the {agent} subagent)" if agent else "")
    _raise_on_signals(None)
    try:
        store = FileJobStore(Settings.from_env().state_dir)
        status = _wait(store, job_id, timeout, time.sleep)
        if status.state.terminal and _owes_no_wake(store, job_id, status, time.sleep):
            return EXIT_OK
    except _Interrupted as exc:
        print(
            f"gemini-relay: stopped waiting for {job} ({exc}); it keeps running. "
            f'Check it with gemini-wait or gemini-status {{"jobId": "{job_id}"}}.',
            file=err,
        )
        return HOOK_WAKE
    except (RelayError, OSError, ValueError):
        return EXIT_OK  # a store or OS error (or a job swept away): silent, as agy-mcp's hook is
    if not status.state.terminal:
        print(
            f"gemini-relay: {job} is still {status.state.value} after {timeout:g}s. "
            f'Collect it later with gemini-wait {{"jobId": "{job_id}"}}.',
            file=err,
        )
        return HOOK_WAKE
    outcome = status.state.value if status.state is not RunState.FAILED else f"failed ({status.failure_reason})"
    print(
        f'gemini-relay: {job} finished: {outcome}. Collect the result with gemini-status {{"jobId": "{job_id}"}}.',
        file=err,
    )
    return HOOK_WAKE


def _owes_no_wake(store: FileJobStore, job_id: str, status: JobStatus, sleep: Callable[[float], None]) -> bool:
    """A tool already returned the outcome (`collected`, written as it answers, so given MARKER_GRACE to appear), or
    gemini-cancel stopped the job and it did end cancelled (`dismissed`; one that ended on its own still wakes)."""
    deadline = time.monotonic() + MARKER_GRACE
    while True:
        if store.collected(job_id) or (status.state is RunState.CANCELLED and store.dismissed(job_id)):
            return True
        if time.monotonic() >= deadline:
            return False
        sleep(MARKER_POLL)


def _hook_payload(payload: str) -> tuple[str, str | None] | None:
    """The job id in a PostToolUse payload for gemini-run (the tool's JSON reply sits inside tool_response), and
    the calling subagent (`agent_type`, present only in a subagent's call)."""
    job_id = _job_id(payload)
    if job_id is None:
        return None
    agent = json.loads(payload).get("agent_type")  # _job_id parsed it: a JSON object
    return job_id, agent if isinstance(agent, str) and _AGENT.fullmatch(agent) else None


def _job_id(payload: str) -> str | None:
    """The job id in a PostToolUse payload for gemini-run (the tool's JSON reply sits inside tool_response)."""
    data = parse_json_line(payload)  # a hook's payload is one JSON object
    if data is None:
        return None
    tool = str(data.get("tool_name", ""))
    if not tool.endswith("gemini-run"):
        return None
    response = json.dumps(data.get("tool_response"))
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
        # A warning, as agy-mcp's doctor gives it: a server adopts them or the periodic sweep reaps them.
        lines.append(
            f"- WARN: stale queued jobs (over 1 h, never started): {', '.join(stale[:10])}. A server adopts them "
            "when it starts, or cancel them (gemini-jobs, gemini-cancel); the sweep removes them after their TTL."
        )
    return lines, problems
