"""MCP tasks in memory, on both generations, through the SDK's stdio framing (tests/inmemory/task_wire.py): a long
tool's call becomes a task whose id is its job's id, tasks/get reports its progress line and finally the exact
CallToolResult the synchronous call would have returned; tasks requests without the extension are refused; a
subscription is told each status; a task that asks the client waits `input_required` and resumes on tasks/update;
a protocol failure ends it `failed`; a task-required tool refuses a client without the extension.

What only processes show (a task cancelled with its CLI's process group, a task outliving its server, the wire of
the stdio front) stays in tests/test_server_tasks.py and tests/test_server_tasks_input.py."""

from __future__ import annotations

import json
import re
from typing import Any

import anyio
import pytest

from tests.conformance.fixtures import SERVE
from tests.inmemory.conftest import InMemory
from tests.inmemory.scripted import Script
from tests.inmemory.task_wire import memory_task_client
from tests.task_client import LEGACY, MODERN, TaskClient

pytestmark = pytest.mark.anyio

JOBS = {"GEMINI_RELAY_TOOLSETS": "jobs"}
FIXTURES = SERVE
ASKS: dict[str, Any] = {"elicitation": {}}  # the client can show a form
THREAD = re.compile(r"🧵 conversationId: [0-9a-f-]+")
RECEIPT = re.compile(r"\n\n— [^\n]+$")
BOUND = 30.0


def text(result: dict[str, Any]) -> str:
    return "".join(block["text"] for block in result["content"] if block["type"] == "text")


def without_thread(result: dict[str, Any]) -> dict[str, Any]:
    """The result with its conversation id masked (each run starts a new conversation) and the server stamp off."""
    data = json.loads(THREAD.sub("🧵 conversationId: <id>", json.dumps(result, ensure_ascii=False)))
    data.pop("_meta", None)
    data.get("structuredContent", {}).pop("receipt", None)  # another run: its own id and timings
    for block in [*data["content"], data.get("structuredContent", {})]:
        if "text" in block:
            block["text"] = RECEIPT.sub("", block["text"])
    return dict(data)


async def until(client: TaskClient, task_id: str, *statuses: str) -> dict[str, Any]:
    """tasks/get until the task is in one of `statuses` (bounded)."""
    with anyio.fail_after(BOUND):
        while (task := await client.get(task_id))["status"] not in statuses:
            assert task["status"] in ("working", "input_required"), task  # ended otherwise: say how
            await anyio.sleep(0.01)
    return task


async def test_a_client_with_the_extension_gets_a_task_whose_result_equals_the_synchronous_call(
    relay: InMemory,
) -> None:
    args = {"prompt": "tasks please"}
    async with memory_task_client(relay, env=JOBS) as client:
        created = await client.call("gemini-ask", args)
        done = await client.until_done(created["taskId"])
        jobs = await client.call("gemini-jobs", {})
        client.extension = False  # the same server, a client without the extension
        sync = await client.call("gemini-ask", args)
    assert created["resultType"] == "task" and created["status"] == "working"
    assert created["pollIntervalMs"] > 0 and created["ttlMs"] > 0
    assert set(created) >= {"taskId", "createdAt", "lastUpdatedAt"}
    assert done["resultType"] == "complete" and done["status"] == "completed"
    assert without_thread(done["result"]) == without_thread(sync)
    assert "Scripted answer to: tasks please" in text(done["result"])
    assert created["taskId"] in text(jobs)  # the task id is the job's id


async def test_a_slow_task_reports_its_progress_line_while_working(relay: InMemory) -> None:
    release = anyio.Event()
    relay.backend.queue(Script(deltas=("a slow chunk of text",), hold=release))
    seen: list[str] = []
    async with memory_task_client(relay) as client:
        created = await client.call("gemini-ask", {"prompt": "go"})
        with anyio.fail_after(BOUND):
            while (task := await client.get(created["taskId"]))["status"] == "working":
                seen.append(task.get("statusMessage", ""))
                if "slow chunk" in seen[-1]:
                    release.set()  # the line quoted the job's text: the run may end
                await anyio.sleep(0.01)
    assert task["status"] == "completed"
    assert "a slow chunk of text" in text(task["result"])
    assert any("slow chunk" in line for line in seen), seen  # the job's text tail, as the keepalive quotes it


async def test_a_legacy_client_gets_the_experimental_tasks_of_2025_11_25_on_the_same_jobs(relay: InMemory) -> None:
    release = anyio.Event()
    relay.backend.queue(Script(deltas=("the old ", "answer"), hold=release))
    async with memory_task_client(relay, LEGACY) as client:
        assert client.initialize is not None
        capabilities = client.initialize["capabilities"]
        tools = {t["name"]: t for t in (await client.result("tools/list", {}))["tools"]}
        created = await client.call("gemini-ask", {"prompt": "old"}, task={"ttl": 60000})
        task_id = created["task"]["taskId"]
        listed = await client.result("tasks/list", {})
        release.set()
        payload = await client.result("tasks/result", {"taskId": task_id})
        final = await client.get(task_id)
        refused = await client.request("tasks/cancel", {"taskId": task_id})
        instant = await client.call("gemini-ask", {"bogus": 1}, task={})
    assert capabilities["tasks"]["requests"]["tools"]["call"] == {}
    assert tools["gemini-ask"]["execution"] == {"taskSupport": "optional"}
    assert "execution" not in tools["gemini-ping"]
    assert created["task"]["status"] == "working" and created["task"]["pollInterval"] > 0
    assert task_id in [t["taskId"] for t in listed["tasks"]]
    assert "the old answer" in text(payload) and payload["isError"] is False
    assert payload["_meta"]["io.modelcontextprotocol/related-task"] == {"taskId": task_id}
    assert final["status"] == "completed" and "result" not in final
    assert refused["error"]["code"] == -32602  # already terminal
    assert instant["task"]["status"] == "completed"  # refused arguments: no run, a finished task
    statuses = [n["params"] for n in client.notifications if n["method"] == "notifications/tasks/status"]
    assert [(s["taskId"], s["status"]) for s in statuses] == [(task_id, "completed")]


async def test_tasks_requests_without_the_extension_are_refused_and_unknown_tasks_are_invalid(
    relay: InMemory,
) -> None:
    async with memory_task_client(relay) as client:
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


async def test_a_subscribed_client_is_told_each_status_of_its_task_and_the_stream_ends_with_it(
    relay: InMemory,
) -> None:
    release = anyio.Event()
    relay.backend.queue(Script(deltas=("told ", "you"), hold=release))

    def on_line(line: dict[str, Any]) -> None:
        if line.get("method") == "notifications/subscriptions/acknowledged":
            release.set()  # subscribed while the task works: its statuses from here on are told

    async with memory_task_client(relay, on_line=on_line) as client:
        discover = await client.result("server/discover", {})
        created = await client.call("gemini-ask", {"prompt": "tell me"})
        listen = await client.result("subscriptions/listen", {"notifications": {"taskIds": [created["taskId"]]}})
    ack, *updates = [n for n in client.notifications if n["method"].startswith("notifications/")]
    assert ack["method"] == "notifications/subscriptions/acknowledged"
    assert ack["params"]["notifications"] == {"taskIds": [created["taskId"]]}
    assert updates and [u["method"] for u in updates] == ["notifications/tasks"] * len(updates)
    assert updates[-1]["params"]["status"] == "completed" and updates[-1]["params"]["taskId"] == created["taskId"]
    assert "told you" in text(updates[-1]["params"]["result"])
    subscription = listen["_meta"]["io.modelcontextprotocol/subscriptionId"]
    assert all(n["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == subscription for n in [ack, *updates])
    assert discover["capabilities"]["tools"] == {"listChanged": False}  # listen serves task notifications only


@pytest.mark.parametrize("version", [MODERN, LEGACY])
async def test_a_client_without_tasks_sees_the_synchronous_shape_unchanged(relay: InMemory, version: str) -> None:
    async with memory_task_client(relay, version, extension=False) as client:
        result = await client.call("gemini-ask", {"prompt": "plain"})
    line = client.lines[-1]
    body = json.loads(line)["result"]
    expected: dict[str, Any] = {
        "content": [{"text": text(body), "type": "text"}],
        "isError": False,
        "structuredContent": {"text": text(body), "receipt": body["structuredContent"]["receipt"]},
    }
    if version == MODERN:
        expected |= {"resultType": "complete", "_meta": body["_meta"]}
    assert result == expected
    expected = {key: expected[key] for key in body}  # the wire's key order
    assert line == json.dumps({"jsonrpc": "2.0", "id": 2 if version == LEGACY else 1, "result": expected},
                              ensure_ascii=False, separators=(",", ":")).encode()  # fmt: skip


# Tasks that ask the client for input, failed tasks and task-required tools (server/tasks/, driven by the
# conformance fixtures, GEMINI_MCP_TEST_TOOLS=conformance).


def answer_text(task: dict[str, Any]) -> str:
    return "".join(block["text"] for block in task["result"]["content"])


async def test_a_task_that_asks_waits_input_required_and_resumes_with_the_answer(relay: InMemory) -> None:
    async with memory_task_client(relay, env=FIXTURES, capabilities=ASKS) as client:
        created = await client.call("confirm_delete", {"filename": "a.txt"})
        waiting = await until(client, created["taskId"], "input_required")
        (key,) = waiting["inputRequests"]
        ack = await client.result(
            "tasks/update",
            {"taskId": created["taskId"], "inputResponses": {key: {"action": "accept", "content": {"confirm": True}}}},
        )
        done = await until(client, created["taskId"], "completed", "failed", "cancelled")
    assert created["resultType"] == "task" and "inputRequests" not in created
    assert waiting["inputRequests"][key]["method"] == "elicitation/create"
    assert waiting["inputRequests"][key]["params"]["message"] == "Delete a.txt?"
    assert ack["resultType"] == "complete" and not {"taskId", "status"} & set(ack)
    assert done["status"] == "completed" and answer_text(done) == "Deleted a.txt"


async def test_a_partial_answer_leaves_only_the_unanswered_question_pending(relay: InMemory) -> None:
    async with memory_task_client(relay, env=FIXTURES, capabilities=ASKS) as client:
        task_id = (await client.call("multi_input", {}))["taskId"]
        both = await until(client, task_id, "input_required")
        answer = {"action": "accept", "content": {"name": "one"}}
        await client.result("tasks/update", {"taskId": task_id, "inputResponses": {"first": answer}})
        partial = await client.get(task_id)
        await client.result("tasks/update", {"taskId": task_id, "inputResponses": {"second": answer}})
        done = await until(client, task_id, "completed", "failed", "cancelled")
    assert sorted(both["inputRequests"]) == ["first", "second"]
    assert partial["status"] == "input_required" and list(partial["inputRequests"]) == ["second"]
    assert answer_text(done) == "Got one and one"


async def test_a_protocol_failure_ends_the_task_failed_with_its_error_and_no_result(relay: InMemory) -> None:
    async with memory_task_client(relay, env=FIXTURES) as client:
        task_id = (await client.call("protocol_error_job", {}))["taskId"]
        failed = await until(client, task_id, "completed", "failed", "cancelled")
    assert failed["status"] == "failed" and "result" not in failed
    assert failed["error"] == {"code": -32603, "message": "protocol_error_job: simulated internal failure"}


async def test_a_task_required_tool_refuses_a_client_without_the_extension(relay: InMemory) -> None:
    async with memory_task_client(relay, extension=False, env=FIXTURES) as client:
        refused = await client.request("tools/call", {"name": "failing_job", "arguments": {}})
    assert refused["error"]["code"] == -32021
    assert refused["error"]["data"] == {"requiredCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}}


async def test_a_cancelled_waiting_task_ends_cancelled(relay: InMemory) -> None:
    async with memory_task_client(relay, env=FIXTURES, capabilities=ASKS) as client:
        task_id = (await client.call("confirm_delete", {"filename": "b.txt"}))["taskId"]
        await until(client, task_id, "input_required")
        await client.result("tasks/cancel", {"taskId": task_id})
        done = await until(client, task_id, "completed", "failed", "cancelled")
    assert done["status"] == "cancelled" and "inputRequests" not in done
