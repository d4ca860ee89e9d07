"""The shell subcommands: wait-job, hook-wait and doctor, with their exit codes, against a real job store."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from gemini_relay.core.result import RunResult
from gemini_relay.core.spec import RunSpec
from gemini_relay.core.vocabulary import BackendName, RunState
from gemini_relay.jobs.store.file_store import FileJobStore
from gemini_relay.jobs.store.job_store import JobMeta, JobResult, Progress
from gemini_relay.supervise.liveness import describe
from tests.executables import relay_command
from tests.harness import Relay

WAIT = 20.0


def make_job(store: FileJobStore, job_id: str, *, running: bool, result: RunState | None = None) -> None:
    spec = RunSpec(tool="gemini-run", prompt="p", cwd=store.root)
    store.create(JobMeta(job_id, "gemini-run", BackendName("gemini"), spec, time.time(), owner=describe(os.getpid())))
    if running or result is not None:
        store.write_supervisor(job_id, describe(os.getpid()))  # this test process stands in for a live supervisor
        store.write_progress(job_id, Progress(state=RunState.RUNNING, started_at=time.time()))
    if result is not None:
        store.write_result(job_id, JobResult(RunResult(state=result, text="answer"), ended_at=time.time()))


def cli(args: list[str], state: Path, stdin: str = "", **env: str) -> subprocess.CompletedProcess[str]:
    full_env = {"PATH": os.environ["PATH"], "HOME": str(state), "GEMINI_RELAY_STATE_DIR": str(state), **env}
    return relay_command(*args, env=full_env, stdin=stdin, timeout=WAIT)


@pytest.fixture
def store(tmp_path: Path) -> FileJobStore:
    return FileJobStore(tmp_path / "state")


def test_wait_job_prints_the_terminal_state_and_exits_0(store: FileJobStore) -> None:
    make_job(store, "j1", running=False, result=RunState.FAILED)
    done = cli(["wait-job", "j1"], store.root)
    assert (done.returncode, done.stdout) == (0, "failed\n")


def test_wait_job_times_out_with_exit_3(store: FileJobStore) -> None:
    make_job(store, "j2", running=True)
    waited = cli(["wait-job", "j2", "--timeout", "0.3s"], store.root)
    assert (waited.returncode, waited.stdout) == (3, "running\n")


def test_wait_job_on_an_unknown_job_is_an_error_and_bad_usage_is_2(store: FileJobStore) -> None:
    unknown = cli(["wait-job", "nope"], store.root)
    assert unknown.returncode == 1 and "No job 'nope'" in unknown.stderr
    assert cli(["wait-job"], store.root).returncode == 2
    assert cli(["wait-job", "j", "--timeout", "soon"], store.root).returncode == 2


def test_wait_job_interrupted_exits_130(store: FileJobStore) -> None:
    make_job(store, "j3", running=True)
    env = {"PATH": os.environ["PATH"], "GEMINI_RELAY_STATE_DIR": str(store.root), "HOME": str(store.root)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "gemini_relay", "wait-job", "j3"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    wait_until_catching(proc.pid, signal.SIGTERM)  # handlers go in together, right before the wait loop
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=WAIT)
    assert proc.returncode == 130 and "interrupted" in err


def wait_until_catching(pid: int, sig: signal.Signals) -> None:
    """Wait (bounded) until the process has installed a handler for `sig`: its SigCgt mask in /proc says so."""
    deadline = time.monotonic() + WAIT
    bit = 1 << (sig.value - 1)
    while time.monotonic() < deadline:
        for line in Path(f"/proc/{pid}/status").read_text(encoding="ascii").splitlines():
            if line.startswith("SigCgt:") and int(line.split()[1], 16) & bit:
                return
        time.sleep(0.01)
    raise AssertionError(f"process {pid} never installed a {sig.name} handler")


def payload(job_id: str, tool: str = "mcp__gemini-relay__gemini-run") -> str:
    reply = json.dumps({"job_id": job_id, "state": "running"})
    return json.dumps({"hook_event_name": "PostToolUse", "tool_name": tool,
                       "tool_response": [{"type": "text", "text": reply}]})  # fmt: skip


def test_hook_wait_wakes_the_agent_when_an_uncollected_job_finishes(store: FileJobStore) -> None:
    make_job(store, "h1", running=False, result=RunState.DONE)
    woke = cli(["hook-wait"], store.root, stdin=payload("h1"))
    assert woke.returncode == 2
    assert woke.stderr.strip().splitlines() == [
        'gemini-relay: job h1 finished: done. Collect the result with gemini-status {"jobId": "h1"}.'
    ]


@pytest.mark.parametrize(
    ("result", "mark"),
    [
        pytest.param(RunState.DONE, FileJobStore.mark_collected, id="its result was already collected"),
        pytest.param(RunState.CANCELLED, FileJobStore.mark_dismissed, id="gemini-cancel stopped it"),
    ],
)
def test_hook_wait_is_silent_for_a_job_whose_answer_is_not_owed(
    store: FileJobStore, result: RunState, mark: Callable[[FileJobStore, str], None]
) -> None:
    make_job(store, "q1", running=False, result=result)
    mark(store, "q1")
    quiet = cli(["hook-wait"], store.root, stdin=payload("q1"))
    assert (quiet.returncode, quiet.stderr) == (0, "")


def test_hook_wait_ignores_other_tools_and_garbage(store: FileJobStore) -> None:
    assert cli(["hook-wait"], store.root, stdin=payload("x", tool="mcp__gemini-relay__gemini-ask")).returncode == 0
    assert cli(["hook-wait"], store.root, stdin="not json").returncode == 0


def test_hook_wait_wakes_on_its_own_timeout_with_a_distinct_message(store: FileJobStore) -> None:
    make_job(store, "h3", running=True)
    woke = cli(["hook-wait", "--timeout", "0.3"], store.root, stdin=payload("h3"))
    assert woke.returncode == 2 and "is still running after 0.3s" in woke.stderr


def test_hook_wait_wakes_on_sigterm_with_a_distinct_message(store: FileJobStore) -> None:
    make_job(store, "h4", running=True)
    env = {"PATH": os.environ["PATH"], "GEMINI_RELAY_STATE_DIR": str(store.root), "HOME": str(store.root)}
    stdin = store.root / "payload.json"
    stdin.write_text(payload("h4"), encoding="utf-8")
    with stdin.open("rb") as feed:
        proc = subprocess.Popen(
            [sys.executable, "-m", "gemini_relay", "hook-wait"],
            stdin=feed,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
    wait_until_catching(proc.pid, signal.SIGTERM)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=WAIT)
    assert proc.returncode == 2 and "stopped waiting for job h4 (SIGTERM); it keeps running" in err


def test_doctor_exits_0_on_a_ready_setup_and_reports_the_job_store(relay: Relay) -> None:
    proc = relay_command("doctor", env=relay.env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (
        "Verdict: ✅ System Ready" in proc.stdout and "## Job store" in proc.stdout and "writable: yes" in proc.stdout
    )


def test_doctor_exits_1_when_the_cli_is_missing(relay: Relay) -> None:
    env = {**relay.env, "GEMINI_CLI_PATH": str(relay.base / "missing" / "gemini")}
    proc = relay_command("doctor", env=env)
    assert proc.returncode == 1 and "Action needed" in proc.stdout
    assert relay_command("doctor", "--bogus", env=env).returncode == 2


def test_version_names_the_package_and_the_tool_surface_it_keeps() -> None:
    done = relay_command("--version")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "gemini-relay 0.1.0 (the tool surface of gemini-relay 1.2.0)"


def test_hook_wait_gives_the_collected_marker_a_moment_to_appear_after_the_job_ends(store: FileJobStore) -> None:
    make_job(store, "g1", running=True)
    ready = store.root / "g1.ready"
    with subprocess.Popen(
        [sys.executable, "-m", "gemini_relay", "hook-wait"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={"PATH": os.environ["PATH"], "GEMINI_RELAY_STATE_DIR": str(store.root), "HOME": str(store.root),
             "GEMINI_RELAY_WAIT_READY_FILE": str(ready)},
    ) as proc:  # fmt: skip
        assert proc.stdin is not None
        proc.stdin.write(payload("g1"))
        proc.stdin.close()
        wait_for_file(ready, proc)
        store.write_result("g1", JobResult(RunResult(state=RunState.DONE, text="answer"), ended_at=time.time()))
        time.sleep(0.3)  # gemini-wait writes `collected` as it answers, a moment after the result: well inside 1 s
        store.mark_collected("g1")
        proc.wait(timeout=WAIT)
        assert proc.stderr is not None
        err = proc.stderr.read()
    assert (proc.returncode, err) == (0, "")


def test_hook_wait_still_wakes_for_a_dismissed_job_that_ended_on_its_own(store: FileJobStore) -> None:
    make_job(store, "d2", running=False, result=RunState.DONE)
    store.mark_dismissed("d2")  # the stop came too late: the job finished first, and its answer is owed
    woke = cli(["hook-wait"], store.root, stdin=payload("d2"))
    assert woke.returncode == 2 and "job d2 finished: done" in woke.stderr


def test_hook_wait_names_the_subagent_that_started_the_job(store: FileJobStore) -> None:
    make_job(store, "a1", running=False, result=RunState.DONE)
    body = json.loads(payload("a1")) | {"agent_type": "general-purpose"}
    woke = cli(["hook-wait"], store.root, stdin=json.dumps(body))
    assert woke.returncode == 2
    assert "gemini-relay: job a1 (started by the general-purpose subagent) finished: done." in woke.stderr
    odd = json.loads(payload("a1")) | {"agent_type": "two\nlines"}
    assert "subagent" not in cli(["hook-wait"], store.root, stdin=json.dumps(odd)).stderr


def test_hook_wait_exits_0_silently_on_a_store_error(store: FileJobStore) -> None:
    not_a_dir = store.root / "file"
    not_a_dir.write_text("", encoding="utf-8")
    quiet = cli(["hook-wait"], not_a_dir, stdin=payload("h1"))
    assert (quiet.returncode, quiet.stderr) == (0, "")


@pytest.mark.parametrize("variable", ["GEMINI_RELAY_WAIT_READY_FILE", "AGY_MCP_WAIT_READY_FILE"])
def test_wait_job_creates_the_ready_file_once_a_signal_would_be_caught(store: FileJobStore, variable: str) -> None:
    make_job(store, "r1", running=True)
    ready = store.root / "r1.ready"
    env = {"PATH": os.environ["PATH"], "GEMINI_RELAY_STATE_DIR": str(store.root), "HOME": str(store.root),
           variable: str(ready)}  # fmt: skip
    with subprocess.Popen([sys.executable, "-m", "gemini_relay", "wait-job", "r1"], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, env=env) as proc:  # fmt: skip
        wait_for_file(ready, proc)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=WAIT)
    assert proc.returncode == 130 and "interrupted" in err


def test_an_existing_ready_file_is_left_alone_and_the_wait_goes_on(store: FileJobStore) -> None:
    make_job(store, "r2", running=False, result=RunState.DONE)
    ready = store.root / "precious"
    ready.write_text("keep me", encoding="utf-8")
    done = cli(["wait-job", "r2"], store.root, GEMINI_RELAY_WAIT_READY_FILE=str(ready))
    assert (done.returncode, done.stdout) == (0, "done\n") and "no ready file" in done.stderr
    assert ready.read_text(encoding="utf-8") == "keep me"


def wait_for_file(path: Path, proc: subprocess.Popen[str]) -> None:
    """Wait (bounded) for the ready file; without it, stop the waiter, which would otherwise wait on forever."""
    deadline = time.monotonic() + WAIT
    while not path.exists():
        if time.monotonic() >= deadline:
            proc.kill()
            raise AssertionError(f"{path} never appeared")
        time.sleep(0.01)


def test_doctor_reports_stale_queued_jobs_as_a_warning_not_a_problem(store: FileJobStore, tmp_path: Path) -> None:
    from dataclasses import replace

    from gemini_relay.commands import doctor_state
    from gemini_relay.config import Settings

    make_job(store, "old", running=False)
    meta = store.meta("old")
    store.delete("old")
    store.create(replace(meta, created_at=time.time() - 7200))
    settings = Settings.from_env({"GEMINI_RELAY_STATE_DIR": str(store.root), "HOME": str(tmp_path)}, cwd=tmp_path)
    lines, problems = doctor_state(settings)
    assert problems == []
    assert any(line.startswith("- WARN: stale queued jobs") and "old" in line for line in lines)
