"""An isolated run's worktree after a crash: the relay host and the server killed (SIGKILL) mid-run leave an
interrupted job and its worktree; the next server's maintenance sweeps the job and removes the worktree and branch."""

from __future__ import annotations

import contextlib
import os
import signal

import anyio
import pytest

from tests.git_repo import GitRepo
from tests.harness import Relay, agy_log, wait_agy_runs
from tests.host.conftest import host_pids, server_pids, state_dir
from tests.test_server_jobs import call_json

pytestmark = pytest.mark.anyio
BOUND = 60.0  # the next server's first maintenance pass runs as it starts


async def test_a_kill_9_mid_run_leaves_no_worktree_after_maintenance(hosted: Relay, agy_relay: Relay) -> None:
    repo = GitRepo.create(hosted.project, {"app.py": "x = 1\n"})
    worktrees = state_dir(hosted) / "worktrees"
    with pytest.raises(BaseException):  # noqa: B017 - the connection dies with the server, however it surfaces
        async with hosted.client() as client:
            started = await call_json(client, "gemini-run", {"prompt": "[[agy:hang]] edit", "isolation": "worktree"})
            await wait_agy_runs(hosted)
            assert len(list(worktrees.glob("wt-*.json"))) == 1 and "gemini-relay/" in repo.git("branch", "--list")
            for pid in [*host_pids(hosted), *server_pids(hosted)]:
                os.kill(pid, signal.SIGKILL)
            await client.call_tool("gemini-ping", {})
    for entry in agy_log(hosted):  # the run's agy, orphaned by its host (it hangs until stopped)
        if entry.get("event") == "start" and "-p" in str(entry["argv"]):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(int(str(entry["pgid"])), signal.SIGKILL)
    async with hosted.client(GEMINI_RELAY_JOB_TTL="0.001") as client:
        with anyio.fail_after(BOUND):
            while any(worktrees.iterdir()):
                await anyio.sleep(0.05)
        status = await call_json(client, "gemini-jobs", {})
    assert started["job_id"] not in [job["job_id"] for job in status["jobs"]]  # swept: interrupted, past the TTL
    assert "gemini-relay/" not in repo.git("branch", "--list")
    assert repo.git("worktree", "list").count("\n") == 1
