"""MCP tasks that ask the client for input, failed tasks and task-required tools (server/tasks/, driven by the
conformance fixtures, GEMINI_MCP_TEST_TOOLS=conformance): a task's question parks it `input_required` with the
requests on tasks/get; tasks/update answers some or all of them (the rest stay pending) and the task resumes; a
protocol-level failure ends it `failed` with its error; a tool that requires a task refuses a client without the
extension with -32021."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from tests.harness import Relay
from tests.task_client import LEGACY, TaskClient, task_client

pytestmark = pytest.mark.anyio
FIXTURES = {"GEMINI_MCP_TEST_TOOLS": "conformance"}
ASKS: dict[str, Any] = {"elicitation": {}}  # the client can show a form


async def until(client: TaskClient, task_id: str, *statuses: str) -> dict[str, Any]:
    """tasks/get until the task is in one of `statuses` (bounded)."""
    with anyio.fail_after(30):
        while (task := await client.get(task_id))["status"] not in statuses:
            assert task["status"] in ("working", "input_required"), task  # ended otherwise: say how
            await anyio.sleep(0.05)
    return task


def text(task: dict[str, Any]) -> str:
    return "".join(block["text"] for block in task["result"]["content"])


async def test_a_task_that_asks_waits_input_required_and_resumes_with_the_answer(relay: Relay) -> None:
    async with task_client(relay, env=FIXTURES, capabilities=ASKS) as client:
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
    assert done["status"] == "completed" and text(done) == "Deleted a.txt"


async def test_a_partial_answer_leaves_only_the_unanswered_question_pending(relay: Relay) -> None:
    async with task_client(relay, env=FIXTURES, capabilities=ASKS) as client:
        task_id = (await client.call("multi_input", {}))["taskId"]
        both = await until(client, task_id, "input_required")
        answer = {"action": "accept", "content": {"name": "one"}}
        await client.result("tasks/update", {"taskId": task_id, "inputResponses": {"first": answer}})
        partial = await client.get(task_id)
        await client.result("tasks/update", {"taskId": task_id, "inputResponses": {"second": answer}})
        done = await until(client, task_id, "completed", "failed", "cancelled")
    assert sorted(both["inputRequests"]) == ["first", "second"]
    assert partial["status"] == "input_required" and list(partial["inputRequests"]) == ["second"]
    assert text(done) == "Got one and one"


async def test_a_protocol_failure_ends_the_task_failed_with_its_error_and_no_result(relay: Relay) -> None:
    async with task_client(relay, env=FIXTURES) as client:
        task_id = (await client.call("protocol_error_job", {}))["taskId"]
        failed = await until(client, task_id, "completed", "failed", "cancelled")
    assert failed["status"] == "failed" and "result" not in failed
    assert failed["error"] == {"code": -32603, "message": "protocol_error_job: simulated internal failure"}


async def test_a_task_required_tool_refuses_a_client_without_the_extension(relay: Relay) -> None:
    async with task_client(relay, extension=False, env=FIXTURES) as client:
        refused = await client.request("tools/call", {"name": "failing_job", "arguments": {}})
    assert refused["error"]["code"] == -32021
    assert refused["error"]["data"] == {"requiredCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}}


async def test_a_cancelled_waiting_task_ends_cancelled(relay: Relay) -> None:
    async with task_client(relay, env=FIXTURES, capabilities=ASKS) as client:
        task_id = (await client.call("confirm_delete", {"filename": "b.txt"}))["taskId"]
        await until(client, task_id, "input_required")
        await client.result("tasks/cancel", {"taskId": task_id})
        done = await until(client, task_id, "completed", "failed", "cancelled")
    assert done["status"] == "cancelled" and "inputRequests" not in done


async def test_over_stdio_the_fixture_surface_is_the_servers_own_not_the_shipped_front_answer(relay: Relay) -> None:
    async with task_client(relay, LEGACY, env=FIXTURES) as client:
        listed = await client.result("tools/list", {})
    assert client.initialize is not None and "completions" in client.initialize["capabilities"]
    assert {"test_simple_text", "slow_compute"} <= {tool["name"] for tool in listed["tools"]}
