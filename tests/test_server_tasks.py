"""MCP tasks over real processes: tasks/cancel stops its job and the CLI's process group, a task outlives its
server like any job, and the synchronous shape of a call without tasks is unchanged on the stdio wire (the server's
own front owns it). The tasks surface itself (task results, progress lines, the legacy generation, refusals,
subscriptions) is proved in memory: tests/inmemory/test_tasks.py."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.fakes.fake_gemini_api import SLOW_CHUNKS
from tests.harness import API_BACKEND, Relay, wait_agy_runs, wait_no_cli_processes
from tests.task_client import MODERN, task_client

pytestmark = pytest.mark.anyio

JOBS = {"GEMINI_RELAY_TOOLSETS": "jobs"}


def text(result: dict[str, Any]) -> str:
    return "".join(block["text"] for block in result["content"] if block["type"] == "text")


async def test_cancelling_a_task_stops_its_job_and_its_process_group(agy_relay: Relay) -> None:
    async with task_client(agy_relay, env=JOBS) as client:
        created = await client.call("gemini-ask", {"prompt": "[[agy:hang]] hold on"})
        await wait_agy_runs(agy_relay)  # its CLI runs
        ack = await client.result("tasks/cancel", {"taskId": created["taskId"]})
        await wait_no_cli_processes(agy_relay.home)
        task = await client.until_done(created["taskId"])
        status = await client.call("gemini-status", {"jobId": created["taskId"]})
    assert {k: v for k, v in ack.items() if k != "_meta"} == {"resultType": "complete"}
    assert task["status"] == "cancelled" and "result" not in task
    assert status["structuredContent"]["state"] == "cancelled" and " · cancelled · " in text(status)


async def test_a_task_outlives_its_server_and_a_new_server_collects_it(relay: Relay) -> None:
    async with task_client(relay, env=API_BACKEND) as first:
        created = await first.call("gemini-ask", {"prompt": "[[fake:slow:0.3]] outlive"})
    # The first server has exited (its client hung up); the job ran on in the relay host.
    async with task_client(relay, env=API_BACKEND) as second:
        task = await second.until_done(created["taskId"])
    assert task["status"] == "completed"
    assert "".join(SLOW_CHUNKS) in text(task["result"])
    assert len(relay.turn_requests()) == 1  # collected, not run again


async def test_a_client_without_tasks_sees_the_synchronous_shape_unchanged_on_the_stdio_wire(relay: Relay) -> None:
    async with task_client(relay, MODERN, extension=False, env={**API_BACKEND, "GEMINI_RELAY_HOST": "off"}) as client:
        result = await client.call("gemini-ask", {"prompt": "plain"})
    line = client.lines[-1]
    body = json.loads(line)["result"]
    receipt = body["structuredContent"]["receipt"]  # every answer of a run carries its receipt (docs/tools.md)
    expected: dict[str, Any] = {"content": [{"text": text(body), "type": "text"}], "isError": False}
    expected |= {"resultType": "complete", "structuredContent": {"text": text(body), "receipt": receipt}}
    expected |= {"_meta": body["_meta"]}
    assert result == expected
    expected = {key: expected[key] for key in body}  # the wire's key order
    assert line == json.dumps({"jsonrpc": "2.0", "id": 1, "result": expected},
                              ensure_ascii=False, separators=(",", ":")).encode()  # fmt: skip
