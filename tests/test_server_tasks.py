"""MCP tasks over the job engine, on both generations: a long tool's call becomes a task whose id is its job's id,
tasks/get reports its progress line and finally the exact CallToolResult the synchronous call would have returned,
tasks/cancel stops its job, and a task outlives its server like any job."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from tests.fakes.fake_gemini_api import SLOW_CHUNKS
from tests.harness import Relay, wait_no_cli_processes
from tests.task_client import LEGACY, MODERN, task_client

pytestmark = pytest.mark.anyio

JOBS = {"GEMINI_RELAY_TOOLSETS": "jobs"}
THREAD = re.compile(r"🧵 conversationId: [0-9a-f-]+")


def text(result: dict[str, Any]) -> str:
    return "".join(block["text"] for block in result["content"] if block["type"] == "text")


def without_thread(result: dict[str, Any]) -> dict[str, Any]:
    """The result with its conversation id masked (each run starts a new conversation) and the server stamp off."""
    data = json.loads(THREAD.sub("🧵 conversationId: <id>", json.dumps(result, ensure_ascii=False)))
    data.pop("_meta", None)
    return dict(data)


async def test_a_client_with_the_extension_gets_a_task_whose_result_equals_the_synchronous_call(relay: Relay) -> None:
    args = {"prompt": "tasks please"}
    async with task_client(relay, env=JOBS) as client:
        created = await client.call("gemini-ask", args)
        done = await client.until_done(created["taskId"])
        jobs = await client.call("gemini-jobs", {})
    async with task_client(relay, extension=False) as plain:
        sync = await plain.call("gemini-ask", args)
    assert created["resultType"] == "task" and created["status"] == "working"
    assert created["pollIntervalMs"] > 0 and created["ttlMs"] > 0
    assert set(created) >= {"taskId", "createdAt", "lastUpdatedAt"}
    assert done["resultType"] == "complete" and done["status"] == "completed"
    assert without_thread(done["result"]) == without_thread(sync)
    assert "Hello from fake Gemini! You said: tasks please" in text(done["result"])
    assert created["taskId"] in text(jobs)  # the task id is the job's id


async def test_a_slow_task_reports_its_progress_line_while_working(relay: Relay) -> None:
    async with task_client(relay) as client:
        created = await client.call("gemini-ask", {"prompt": "[[fake:slow:0.5]] go"})
        seen: list[str] = []
        while (task := await client.get(created["taskId"]))["status"] == "working":
            seen.append(task.get("statusMessage", ""))
    assert task["status"] == "completed"
    assert "".join(SLOW_CHUNKS) in text(task["result"])
    assert any("slow chunk" in line for line in seen), seen  # the job's text tail, as the keepalive quotes it


async def test_a_legacy_client_gets_the_experimental_tasks_of_2025_11_25_on_the_same_jobs(relay: Relay) -> None:
    async with task_client(relay, LEGACY) as client:
        assert client.initialize is not None
        capabilities = client.initialize["capabilities"]
        tools = {t["name"]: t for t in (await client.result("tools/list", {}))["tools"]}
        created = await client.call("gemini-ask", {"prompt": "[[fake:slow:0.2]] old"}, task={"ttl": 60000})
        task_id = created["task"]["taskId"]
        listed = await client.result("tasks/list", {})
        payload = await client.result("tasks/result", {"taskId": task_id})
        final = await client.get(task_id)
        refused = await client.request("tasks/cancel", {"taskId": task_id})
        instant = await client.call("gemini-ask", {"bogus": 1}, task={})
    assert capabilities["tasks"]["requests"]["tools"]["call"] == {}
    assert tools["gemini-ask"]["execution"] == {"taskSupport": "optional"}
    assert "execution" not in tools["gemini-ping"]
    assert created["task"]["status"] == "working" and created["task"]["pollInterval"] > 0
    assert task_id in [t["taskId"] for t in listed["tasks"]]
    assert "".join(SLOW_CHUNKS) in text(payload) and payload["isError"] is False
    assert payload["_meta"]["io.modelcontextprotocol/related-task"] == {"taskId": task_id}
    assert final["status"] == "completed" and "result" not in final
    assert refused["error"]["code"] == -32602  # already terminal
    assert instant["task"]["status"] == "completed"  # refused arguments: no run, a finished task
    statuses = [n["params"] for n in client.notifications if n["method"] == "notifications/tasks/status"]
    assert [(s["taskId"], s["status"]) for s in statuses] == [(task_id, "completed")]


async def test_cancelling_a_task_stops_its_job_and_its_process_group(relay: Relay) -> None:
    async with task_client(relay, env=JOBS) as client:
        created = await client.call("gemini-ask", {"prompt": "[[fake:stall]]"})
        while not relay.main_requests():
            await client.get(created["taskId"])
        ack = await client.result("tasks/cancel", {"taskId": created["taskId"]})
        await wait_no_cli_processes(relay.home)
        task = await client.until_done(created["taskId"])
        status = await client.call("gemini-status", {"jobId": created["taskId"]})
    assert {k: v for k, v in ack.items() if k != "_meta"} == {"resultType": "complete"}
    assert task["status"] == "cancelled" and "result" not in task
    assert status["structuredContent"]["state"] == "cancelled" and " · cancelled · " in text(status)


async def test_a_task_outlives_its_server_and_a_new_server_collects_it(relay: Relay) -> None:
    async with task_client(relay) as first:
        created = await first.call("gemini-ask", {"prompt": "[[fake:slow:0.5]] outlive"})
    # The first server has exited (its client hung up); the job ran on under its supervisor.
    async with task_client(relay) as second:
        task = await second.until_done(created["taskId"])
    assert task["status"] == "completed"
    assert "".join(SLOW_CHUNKS) in text(task["result"])
    assert len(relay.main_requests()) == 1  # collected, not run again


async def test_tasks_requests_without_the_extension_are_refused_and_unknown_tasks_are_invalid(relay: Relay) -> None:
    async with task_client(relay) as client:
        discover = await client.result("server/discover", {})
        missing = await client.request("tasks/get", {"taskId": "0123456789ab"}, extension=False)
        cancel = await client.request("tasks/cancel", {"taskId": "0123456789ab"}, extension=False)
        unknown = await client.request("tasks/get", {"taskId": "0123456789ab"})
        traversal = await client.request("tasks/get", {"taskId": "../../etc/passwd"})
        created = await client.call("gemini-ask", {"prompt": "update me"})
        update = await client.result("tasks/update", {"taskId": created["taskId"], "inputResponses": {}})
        await client.until_done(created["taskId"])
    assert discover["capabilities"]["extensions"] == {"io.modelcontextprotocol/tasks": {}}
    for refused in (missing, cancel):
        assert refused["error"]["code"] == -32021
        assert refused["error"]["data"] == {
            "requiredCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}
        }
    assert unknown["error"]["code"] == -32602 and traversal["error"]["code"] == -32602
    assert update["resultType"] == "complete"


async def test_a_subscribed_client_is_told_each_status_of_its_task_and_the_stream_ends_with_it(relay: Relay) -> None:
    async with task_client(relay) as client:
        discover = await client.result("server/discover", {})
        created = await client.call("gemini-ask", {"prompt": "[[fake:slow:0.3]] tell me"})
        listen = await client.result("subscriptions/listen", {"notifications": {"taskIds": [created["taskId"]]}})
    ack, *updates = [n for n in client.notifications if n["method"].startswith("notifications/")]
    assert ack["method"] == "notifications/subscriptions/acknowledged"
    assert ack["params"]["notifications"] == {"taskIds": [created["taskId"]]}
    assert [u["method"] for u in updates] == ["notifications/tasks"] * len(updates)
    assert updates[-1]["params"]["status"] == "completed" and updates[-1]["params"]["taskId"] == created["taskId"]
    assert "".join(SLOW_CHUNKS) in text(updates[-1]["params"]["result"])
    subscription = listen["_meta"]["io.modelcontextprotocol/subscriptionId"]
    assert all(n["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == subscription for n in [ack, *updates])
    assert discover["capabilities"]["tools"] == {"listChanged": False}  # listen serves task notifications only


@pytest.mark.parametrize("version", [MODERN, LEGACY])
async def test_a_client_without_tasks_sees_the_synchronous_shape_unchanged(relay: Relay, version: str) -> None:
    async with task_client(relay, version, extension=False) as client:
        result = await client.call("gemini-ask", {"prompt": "plain"})
    line = client.lines[-1]
    body = json.loads(line)["result"]
    expected: dict[str, Any] = {"content": [{"text": text(body), "type": "text"}], "isError": False}
    if version == MODERN:
        expected |= {"resultType": "complete", "_meta": body["_meta"]}
    assert result == expected
    assert line == json.dumps({"jsonrpc": "2.0", "id": 2 if version == LEGACY else 1, "result": expected},
                              ensure_ascii=False, separators=(",", ":")).encode()  # fmt: skip
