"""Two servers, one host: one cap and one job store; a server or a host killed outright loses no finished result."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from tests.fakes.fake_gemini_api import SLOW_CHUNKS, STALL_TEXT, FakeGeminiApi, echo_text
from tests.harness import API_BACKEND, Relay, wait_no_cli_processes
from tests.host.conftest import host_pids, host_request, server_pids, state_dir
from tests.test_server_jobs import call_json
from tests.test_server_surface import text_of

pytestmark = pytest.mark.anyio


async def test_two_servers_share_one_host_one_cap_and_one_job_store(hosted: Relay) -> None:
    hosted.env.update({"GEMINI_RELAY_MAX_CONCURRENT": "1", **API_BACKEND})
    async with hosted.client() as first, hosted.client() as second:
        slow = await call_json(first, "gemini-run", {"prompt": "[[fake:slow:0.5]] first"})
        await anyio.to_thread.run_sync(hosted.api.wait_for_requests, 1)
        queued = await call_json(second, "gemini-run", {"prompt": "second"})
        seen = await call_json(second, "gemini-status", {"jobId": queued["job_id"]})
        assert seen["state"] == "queued"  # behind the first server's run: one cap for both
        assert len(hosted.turn_requests()) == 1
        other = await call_json(second, "gemini-wait", {"jobId": slow["job_id"]})  # the first's job, seen by both
        done = await call_json(first, "gemini-wait", {"jobId": queued["job_id"]})
    assert other["state"] == "done" and other["result"] == "".join(SLOW_CHUNKS)
    assert done["state"] == "done" and done["result"] == echo_text("second")
    assert [r.scenario for r in hosted.turn_requests()] == ["slow", "default"]
    assert len(host_pids(hosted)) == 1


async def test_a_host_killed_mid_run_leaves_an_interrupted_job_with_its_text_and_the_next_call_starts_a_new_one(
    hosted: Relay,
) -> None:
    hosted.env.update(API_BACKEND)  # the run dies with its host; a CLI orphaned by a dead host: the last test here
    async with hosted.client() as client:
        async with anyio.create_task_group() as tg:
            answers: list[str] = []

            async def ask() -> None:
                result = await client.call_tool("gemini-ask", {"prompt": "[[fake:stall]]"})
                answers.append(text_of(result))

            tg.start_soon(ask)
            jobs = state_dir(hosted) / "jobs"
            with anyio.fail_after(30):
                while not any(STALL_TEXT in _read(out) for out in jobs.glob("*/out.txt")):
                    await anyio.sleep(0.05)
            old = host_request(hosted, {"op": "status"})[1]["pid"]
            os.kill(old, signal.SIGKILL)
        await wait_no_cli_processes(hosted.home)
        listed = await call_json(client, "gemini-jobs", {})
        status = await call_json(client, "gemini-status", {"jobId": listed["jobs"][0]["job_id"]})
        again = await client.call_tool("gemini-ask", {"prompt": "after the crash"})
    assert status["state"] == "failed" and status["failure_reason"] == "interrupted"
    assert status["partial"] is True and STALL_TEXT in status["result"]
    assert "interrupted" in answers[0] and STALL_TEXT in answers[0]
    assert not again.is_error and echo_text("after the crash") in text_of(again)
    assert host_request(hosted, {"op": "status"})[1]["pid"] != old


async def test_a_server_killed_mid_run_loses_nothing_its_job_finishes_in_the_host(hosted: Relay) -> None:
    hosted.env.update(API_BACKEND)
    with pytest.raises(BaseException):  # noqa: B017 - the connection dies with the server, however it surfaces
        async with hosted.client() as client, anyio.create_task_group() as tg:
            tg.start_soon(client.call_tool, "gemini-ask", {"prompt": "[[fake:slow:0.4]] keep going"})
            await anyio.to_thread.run_sync(hosted.api.wait_for_requests, 1)
            for pid in server_pids(hosted):
                os.kill(pid, signal.SIGKILL)
    async with hosted.client() as client:
        listed = await call_json(client, "gemini-jobs", {})
        done = await call_json(client, "gemini-wait", {"jobId": listed["jobs"][0]["job_id"]})
    assert done["state"] == "done" and done["result"] == "".join(SLOW_CHUNKS)


async def test_with_the_host_off_the_same_executor_runs_inside_the_server_and_no_other_process_starts(
    relay: Relay,
) -> None:
    """GEMINI_RELAY_HOST=off is not another path: the server runs the host's executor itself (its own socket, no
    lock, no idle exit), recorded as the job's supervisor the way a shared host is; no host or per-job process."""
    async with relay.client(GEMINI_RELAY_HOST="off", GEMINI_RELAY_TOOLSETS="jobs", **API_BACKEND) as client:
        result = await client.call_tool("gemini-ask", {"prompt": "no host"})
        listed = await call_json(client, "gemini-jobs", {})
        servers = server_pids(relay)
        assert host_pids(relay) == []
    job = state_dir(relay) / "jobs" / listed["jobs"][0]["job_id"]
    supervisor = json.loads((job / "supervisor.json").read_text(encoding="utf-8"))
    assert not result.is_error and echo_text("no host") in text_of(result)
    assert servers == [supervisor["pid"]] and supervisor["shared"] is True
    assert not (state_dir(relay) / "host" / "host.sock").exists()


async def test_by_default_the_shared_host_runs_the_job_as_its_supervisor(hosted: Relay) -> None:
    hosted.env.update(API_BACKEND)
    async with hosted.client() as client:
        result = await client.call_tool("gemini-run", {"prompt": "in the host"})
        job_id = (result.structured_content or {})["job_id"]
        await call_json(client, "gemini-wait", {"jobId": job_id})
    supervisor = json.loads((state_dir(hosted) / "jobs" / job_id / "supervisor.json").read_text(encoding="utf-8"))
    assert host_pids(hosted) == [supervisor["pid"]] and supervisor["shared"] is True


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


async def test_a_call_queued_behind_another_servers_run_says_it_waits_in_the_queue(hosted: Relay) -> None:
    queued: list[str] = []
    results: list[str] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        queued.append(message or "")

    env = {"GEMINI_RELAY_MAX_CONCURRENT": "1", "GEMINI_RELAY_PROGRESS_INTERVAL": "0.25", **API_BACKEND}
    async with hosted.client(**env) as first, hosted.client(**env) as second, anyio.create_task_group() as tg:

        async def run(client: Client, prompt: str, callback: Any = None) -> None:
            result = await client.call_tool("gemini-ask", {"prompt": prompt}, progress_callback=callback)
            results.append(text_of(result))

        tg.start_soon(run, first, "[[fake:slow:0.6]] first")
        await anyio.to_thread.run_sync(hosted.api.wait_for_requests, 1)
        tg.start_soon(run, second, "second", on_progress)
    assert any("Waiting in the queue for a free api slot" in m for m in queued), queued
    assert any(echo_text("second") in r for r in results)


async def test_a_job_queued_in_a_host_that_died_runs_at_once_in_the_next_host_with_its_own_environment(
    hosted: Relay,
) -> None:
    """Job 2 waits behind job 1 (cap 1) when the host is killed; its server is gone. The next server, of another
    project (another API endpoint and key), starts a new host: job 2 runs there promptly against its own endpoint,
    never the new server's, and is not left `queued` for a maintenance pass."""
    hosted.env["GEMINI_RELAY_MAX_CONCURRENT"] = "1"
    async with hosted.client() as client:
        first = await call_json(client, "gemini-run", {"prompt": "[[fake:stall]]"})
        second = await call_json(client, "gemini-run", {"prompt": "queued behind the first"})
        await anyio.to_thread.run_sync(hosted.api.wait_for_requests, 1)
    # Job 1's CLI is orphaned: the next host reaps it (the harness fails the test on any process left).
    os.kill(host_request(hosted, {"op": "status"})[1]["pid"], signal.SIGKILL)
    with FakeGeminiApi() as other_api:
        other = {"GOOGLE_GEMINI_BASE_URL": other_api.base_url, "GEMINI_API_KEY": "another-projects-key"}
        async with hosted.client(**other) as client:
            done = await call_json(client, "gemini-wait", {"jobId": second["job_id"], "wait": 30})
            interrupted = await call_json(client, "gemini-status", {"jobId": first["job_id"]})
        assert other_api.requests == []  # nothing of job 2 went to the other project's endpoint
    assert done["state"] == "done" and echo_text("queued behind the first") in done["result"], done
    assert interrupted["state"] == "failed" and interrupted["failure_reason"] == "interrupted"
    assert any("queued behind the first" in str(r.body) for r in hosted.api.requests)
    jobs = state_dir(hosted) / "jobs"
    assert not (jobs / first["job_id"] / "env.json").exists()  # the interrupted job's API key is not left behind
    assert not (jobs / second["job_id"] / "env.json").exists()
