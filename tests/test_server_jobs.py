"""Durable jobs through the MCP client: runs outlive their client and their server, and are collected later."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from tests.fakes.fake_gemini_api import SLOW_CHUNKS
from tests.harness import (
    API_BACKEND,
    Relay,
    agy_log,
    agy_runs,
    install_fake_agy,
    module_event_loop,
    processes_using,
    shared_server,
    wait_agy_runs,
    wait_no_cli_processes,
)
from tests.test_server_surface import text_of

pytestmark = pytest.mark.anyio

JOBS = {"GEMINI_RELAY_TOOLSETS": "jobs"}
API_JOBS = {**JOBS, **API_BACKEND}  # these tests are about jobs and processes, not the CLI: no CLI boots


# Cases whose world is the same (jobs on the api backend; jobs on the fake agy) share one server each; a case that
# kills or restarts servers, or changes the env or the fake, has a world of its own.
anyio_backend = module_event_loop()
api_world, api_client = shared_server("api", API_JOBS)
agy_world, agy_client = shared_server("agy", JOBS, fake_agy=True)


async def call_json(client: Client, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(tool, args)
    assert not result.is_error, text_of(result)
    data: dict[str, Any] | None = result.structured_content  # the job's fields; the text is Markdown for a person
    assert data is not None, text_of(result)
    return data


def server_pids(relay: Relay) -> list[int]:
    """The relay server processes of this test (not supervisors, not the relay host, not CLIs)."""
    found = []
    for pid in processes_using(relay.home):
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        if b"gemini_relay" in cmdline and b"run-job" not in cmdline and b"host" not in cmdline:
            found.append(pid)
    return found


async def test_run_answers_at_once_and_wait_collects_the_whole_answer(api_world: Relay, api_client: Client) -> None:
    tools = [t.name for t in (await api_client.list_tools()).tools]
    started = await call_json(api_client, "gemini-run", {"prompt": "[[fake:slow:0.3]] hello"})
    done = await call_json(api_client, "gemini-wait", {"jobId": started["job_id"]})
    status = await call_json(api_client, "gemini-status", {"jobId": started["job_id"]})
    listed = await call_json(api_client, "gemini-jobs", {})
    jobs_toolset = [
        "gemini-run",
        "gemini-status",
        "gemini-wait",
        "gemini-jobs",
        "gemini-quota",
        "gemini-apply",
        "gemini-discard",
    ]
    assert tools[11:] == jobs_toolset
    assert started["state"] in ("queued", "starting", "running")
    assert started["conversation_id"]  # the Gemini CLI's session id is known at once
    assert done["state"] == "done" and done["result"] == "".join(SLOW_CHUNKS)
    assert done["partial"] is False and done["conversation_id"] == started["conversation_id"]
    assert done["usage"]["input_tokens"] == 12
    assert status == done
    assert listed["jobs"][0]["job_id"] == started["job_id"]


async def test_a_job_survives_its_server_being_killed_and_a_new_server_collects_it(relay: Relay) -> None:
    with pytest.raises(BaseException):  # noqa: B017 - the connection dies with the server, however it surfaces
        async with relay.client(**API_JOBS) as client:
            started = await call_json(client, "gemini-run", {"prompt": "[[fake:slow:0.4]] survive"})
            for pid in server_pids(relay):
                os.kill(pid, signal.SIGKILL)
            await client.call_tool("gemini-ping", {})
    async with relay.client(**API_JOBS) as client:
        done = await call_json(client, "gemini-wait", {"jobId": started["job_id"]})
    assert done["state"] == "done"
    assert done["result"] == "".join(SLOW_CHUNKS)


def raw_server(relay: Relay, **env: str) -> subprocess.Popen[bytes]:
    """The server driven with raw JSON-RPC, so a test can hang up without any MCP-level goodbye."""
    return subprocess.Popen(
        [sys.executable, "-m", "gemini_relay"],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,  # responses are not read: the test only needs the server to get the call
        stderr=subprocess.DEVNULL,
        env={**relay.env, **env},
        cwd=relay.project,
    )


def send(proc: subprocess.Popen[bytes], message: dict[str, Any]) -> None:
    assert proc.stdin is not None
    proc.stdin.write(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")
    proc.stdin.flush()


async def test_a_sync_call_whose_client_vanishes_finishes_and_stays_collectable(relay: Relay) -> None:
    proc = raw_server(relay, **API_JOBS)
    init = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    send(proc, {"id": 1, "method": "initialize", "params": init})
    send(proc, {"method": "notifications/initialized"})
    call = {"name": "gemini-ask", "arguments": {"prompt": "[[fake:slow:0.4]] keep going"}}
    send(proc, {"id": 2, "method": "tools/call", "params": call})
    await anyio.to_thread.run_sync(relay.api.wait_for_requests, 1)
    assert proc.stdin is not None
    proc.stdin.close()  # the client is gone: stdin closed, no notifications/cancelled
    await anyio.to_thread.run_sync(proc.wait, 60.0)  # a bound on a hang: the server finishes its call first
    async with relay.client(**API_JOBS) as client:
        listed = await call_json(client, "gemini-jobs", {})
        job = listed["jobs"][0]
        done = await call_json(client, "gemini-wait", {"jobId": job["job_id"]})
    assert done["state"] == "done" and done["result"] == "".join(SLOW_CHUNKS)


async def test_an_explicit_mcp_cancel_still_stops_the_job(agy_world: Relay, agy_client: Client) -> None:
    before = agy_runs(agy_world)
    async with anyio.create_task_group() as tg:

        async def ask() -> None:
            await agy_client.call_tool("gemini-ask", {"prompt": "[[agy:hang]] hold on"})

        tg.start_soon(ask)
        await wait_agy_runs(agy_world, before + 1)  # its CLI runs
        tg.cancel_scope.cancel()  # the client sends notifications/cancelled
    await wait_no_cli_processes(agy_world.home)
    with anyio.fail_after(20):
        while (await call_json(agy_client, "gemini-jobs", {}))["jobs"][0]["state"] != "cancelled":
            await anyio.sleep(0.05)


async def test_status_says_which_step_a_running_agy_job_is_on_and_an_ended_job_keeps_its_last(
    agy_world: Relay, agy_client: Client
) -> None:
    hung = await call_json(agy_client, "gemini-run", {"prompt": "[[agy:hang]] hold on"})
    with anyio.fail_after(20):  # agy reports its user_input step, then the agent_response it hangs in
        while (running := await call_json(agy_client, "gemini-status", {"jobId": hung["job_id"]})).get(
            "step_type"
        ) != "agent_response":
            await anyio.sleep(0.05)
    await agy_client.call_tool("gemini-cancel", {"jobId": hung["job_id"]})
    done = await call_json(agy_client, "gemini-run", {"prompt": "quick", "wait": 60})
    listed = await call_json(agy_client, "gemini-jobs", {})
    assert running["state"] == "running"
    assert done["state"] == "done" and done["step_type"] == "agent_response"
    assert {job["job_id"]: job.get("step_type") for job in listed["jobs"]}[done["job_id"]] == "agent_response"


async def test_run_with_project_rules_false_leaves_the_cwd_out_of_agys_workspaces(
    agy_world: Relay, agy_client: Client
) -> None:
    seen = len(agy_log(agy_world))
    kept = await call_json(agy_client, "gemini-run", {"prompt": "rules", "wait": 60})
    left = await call_json(agy_client, "gemini-run", {"prompt": "no rules", "projectRules": False, "wait": 60})
    assert kept["state"] == left["state"] == "done"
    starts = [e["argv"] for e in agy_log(agy_world)[seen:] if e.get("event") == "start"]
    runs = [argv for argv in starts if isinstance(argv, list) and "stream-json" in argv]
    assert [str(agy_world.project) in argv for argv in runs] == [True, False]


async def test_continuing_a_conversation_that_is_running_is_refused_across_servers(relay: Relay) -> None:
    async with relay.client(**API_JOBS) as first:
        seed = await call_json(first, "gemini-run", {"prompt": "seed"})
        await call_json(first, "gemini-wait", {"jobId": seed["job_id"]})
        conversation = seed["conversation_id"]
        busy = await call_json(first, "gemini-run", {"prompt": "[[fake:stall]] more", "conversationId": conversation})
        async with relay.client(**API_JOBS) as second:
            refused = await second.call_tool("gemini-run", {"prompt": "clash", "conversationId": conversation})
            fresh = await call_json(second, "gemini-run", {"prompt": "a fresh run is never serialized"})
            await call_json(second, "gemini-wait", {"jobId": fresh["job_id"]})
        await first.call_tool("gemini-cancel", {"jobId": busy["job_id"]})  # the busy run ends (it stalls until then)
        after = await call_json(first, "gemini-run", {"prompt": "now it is free", "conversationId": conversation})
        await call_json(first, "gemini-wait", {"jobId": after["job_id"]})
    assert refused.is_error and "already has a run in flight" in text_of(refused)


async def test_the_conversation_gate_holds_after_the_server_that_started_the_run_is_killed_and_restarted(
    relay: Relay,
) -> None:
    with pytest.raises(BaseException):  # noqa: B017 - the connection dies with the server, however it surfaces
        async with relay.client(**API_JOBS) as first:
            seed = await call_json(first, "gemini-run", {"prompt": "seed", "wait": 60})
            conversation = seed["conversation_id"]
            busy = await call_json(
                first, "gemini-run", {"prompt": "[[fake:stall]] more", "conversationId": conversation}
            )
            for pid in server_pids(relay):
                os.kill(pid, signal.SIGKILL)
            await first.call_tool("gemini-ping", {})
    async with relay.client(**API_JOBS) as restarted:
        refused = await restarted.call_tool("gemini-run", {"prompt": "clash", "conversationId": conversation})
        still = await call_json(restarted, "gemini-status", {"jobId": busy["job_id"]})
        await restarted.call_tool("gemini-cancel", {"jobId": busy["job_id"]})
        await call_json(restarted, "gemini-wait", {"jobId": busy["job_id"]})
        after = await call_json(restarted, "gemini-run", {"prompt": "free", "conversationId": conversation, "wait": 60})
    assert refused.is_error and "already has a run in flight" in text_of(refused)
    assert still["state"] == "running"
    assert after["state"] == "done"


async def test_a_recycled_pid_is_not_mistaken_for_a_live_supervisor(api_world: Relay, api_client: Client) -> None:
    started = await call_json(api_client, "gemini-run", {"prompt": "quick"})
    await call_json(api_client, "gemini-wait", {"jobId": started["job_id"]})
    job_dir = api_world.home / ".local" / "state" / "gemini-relay" / "jobs" / started["job_id"]
    (job_dir / "exit_code").unlink()  # as if the supervisor died before its result...
    # ...and its pid now belongs to this very test process, with another start time.
    (job_dir / "supervisor.json").write_text(json.dumps({"pid": os.getpid(), "start_ticks": 1}), encoding="utf-8")
    status = await call_json(api_client, "gemini-status", {"jobId": started["job_id"]})
    assert status["state"] == "failed" and status["failure_reason"] == "interrupted"


async def test_an_optional_run_is_refused_when_the_agy_quota_runs_low(agy_relay: Relay) -> None:
    low = [{"name": "Gemini Models", "buckets": [{"id": "g-5h", "name": "Five Hour Limit Remaining",
            "remaining_fraction": 0.1, "reset_time": "2099-10-02T16:59:24Z"}]}]  # fmt: skip
    install_fake_agy(agy_relay.base / "bin", agy_relay.base / "fake-agy.log", usage=json.dumps(low))
    async with agy_relay.client(**JOBS) as client:
        open_before = await call_json(client, "gemini-run", {"prompt": "no reading yet", "priority": "optional"})
        await client.call_tool("gemini-doctor", {})  # takes (and caches) the quota reading
        refused = await client.call_tool("gemini-run", {"prompt": "later", "priority": "optional"})
        normal = await call_json(client, "gemini-run", {"prompt": "normal priority runs"})
        await call_json(client, "gemini-wait", {"jobId": open_before["job_id"]})
        await call_json(client, "gemini-wait", {"jobId": normal["job_id"]})
    text = text_of(refused)
    assert refused.is_error and "Refused an optional-priority run" in text
    assert "Gemini Models: low" in text and "10% left" in text and "2099-10-02T16:59:24Z" in text


async def test_run_with_wait_answers_a_job_that_ends_in_time_with_its_result_and_collects_it(
    api_world: Relay, api_client: Client
) -> None:
    done = await call_json(api_client, "gemini-run", {"prompt": "[[fake:slow:0.05]] hello", "wait": 60})
    assert done["state"] == "done" and done["result"] == "".join(SLOW_CHUNKS)
    assert done["num_turns"] == done["turns"] and done["partial"] is False
    job_dir = api_world.home / ".local" / "state" / "gemini-relay" / "jobs" / done["job_id"]
    assert (job_dir / "collected").is_file()  # answered inline: hook-wait owes no wake for it


async def test_run_with_wait_is_capped_and_answers_a_job_still_running_with_its_job_id(relay: Relay) -> None:
    async with relay.client(**API_JOBS, GEMINI_RELAY_WAIT_CAP="0.2") as client:
        started = await call_json(client, "gemini-run", {"prompt": "[[fake:hang]] hello", "wait": 3600})
        await client.call_tool("gemini-cancel", {"jobId": started["job_id"]})
    assert started["state"] in ("queued", "starting", "running") and "result" not in started
    assert started["next"].startswith(f"Still {started['state']} after 0.2s. ")
    assert f'gemini-wait {{"jobId": "{started["job_id"]}"}}' in started["next"]
    job_dir = relay.home / ".local" / "state" / "gemini-relay" / "jobs" / started["job_id"]
    assert (job_dir / "dismissed").is_file()  # gemini-cancel stopped it: hook-wait owes no wake once it is cancelled


async def test_a_retried_idempotency_key_returns_its_job_whatever_the_priority_and_the_quota(agy_relay: Relay) -> None:
    low = [{"name": "Gemini Models", "buckets": [{"id": "g-5h", "name": "Five Hour Limit Remaining",
            "remaining_fraction": 0.1, "reset_time": "2099-10-02T16:59:24Z"}]}]  # fmt: skip
    install_fake_agy(agy_relay.base / "bin", agy_relay.base / "fake-agy.log", usage=json.dumps(low))
    ask = {"prompt": "a second opinion", "idempotencyKey": "k-1"}
    async with agy_relay.client(**JOBS) as client:
        first = await call_json(client, "gemini-run", {**ask, "priority": "optional"})  # no reading yet: it runs
        await client.call_tool("gemini-doctor", {})  # takes (and caches) the low reading
        optional_retry = await call_json(client, "gemini-run", {**ask, "priority": "optional"})
        normal_retry = await call_json(client, "gemini-run", ask)
        await call_json(client, "gemini-wait", {"jobId": first["job_id"]})
    assert optional_retry["job_id"] == normal_retry["job_id"] == first["job_id"]
    assert "idempotencyKey matched" in optional_retry["note"] and "idempotencyKey matched" in normal_retry["note"]
