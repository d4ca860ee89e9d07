"""The jobs toolset in memory: an idempotency key names one job (the same request gets it again, another request is
refused), and with the jobs toolset on the synchronous tools answer as before. What only processes show (a job
outliving its client, its server or its host; cancels reaching a CLI's process group) stays in
tests/test_server_jobs.py and tests/host/."""

from __future__ import annotations

import anyio
import pytest

from tests.inmemory.conftest import InMemory, text_of
from tests.inmemory.scripted import Script
from tests.jobs.full_disk import full_disk
from tests.test_server_jobs import JOBS, call_json  # the jobs toolset and its structured replies, as end to end

pytestmark = pytest.mark.anyio


async def test_the_same_idempotency_key_returns_the_same_job_and_another_request_is_refused(relay: InMemory) -> None:
    async with relay.client(**JOBS) as client:
        first = await call_json(client, "gemini-run", {"prompt": "once", "idempotencyKey": "k-1"})
        again = await call_json(client, "gemini-run", {"prompt": "once", "idempotencyKey": "k-1"})
        other = await client.call_tool("gemini-run", {"prompt": "something else", "idempotencyKey": "k-1"})
        await call_json(client, "gemini-wait", {"jobId": first["job_id"]})
    assert again["job_id"] == first["job_id"]
    assert other.is_error and "already bound to a different request" in text_of(other)
    assert [spec.prompt for spec in relay.backend.specs] == ["once"]


async def test_jobs_answer_through_the_sync_tools_unchanged(relay: InMemory) -> None:
    async with relay.client(**JOBS) as client:
        result = await client.call_tool("gemini-ask", {"prompt": "plain"})
    assert text_of(result).startswith("Gemini response:\nScripted answer to: plain\n\n🧵 conversationId: ")


async def test_a_retry_that_spells_out_the_defaults_is_the_same_request_and_gets_the_same_job(relay: InMemory) -> None:
    async with relay.client(**JOBS) as client:
        maximum = relay.settings().timeout_seconds
        first = await call_json(client, "gemini-run", {"prompt": "once", "idempotencyKey": "k-2"})
        spelled = {"prompt": "once", "idempotencyKey": "k-2", "priority": "normal", "timeoutSeconds": maximum,
                   "model": None, "sandbox": False}  # fmt: skip
        again = await call_json(client, "gemini-run", spelled)
        optional = await call_json(client, "gemini-run", {"prompt": "once", "idempotencyKey": "k-2",
                                                          "priority": "optional"})  # fmt: skip
        other = await client.call_tool("gemini-run", {"prompt": "twice", "idempotencyKey": "k-2"})
        await call_json(client, "gemini-wait", {"jobId": first["job_id"]})
    assert again["job_id"] == optional["job_id"] == first["job_id"]  # priority is not part of the match (seed 001)
    assert other.is_error and "already bound to a different request" in text_of(other)
    assert [spec.prompt for spec in relay.backend.specs] == ["once"]


async def test_the_status_of_a_finished_job_on_a_full_state_dir_is_its_result_not_an_internal_error(
    relay: InMemory,
) -> None:
    async with relay.client(**JOBS) as client:
        job = await call_json(client, "gemini-run", {"prompt": "kept"})
        await call_json(client, "gemini-wait", {"jobId": job["job_id"], "wait": 10})
        collected = relay.base / "state" / "jobs" / job["job_id"] / "collected"
        collected.unlink()  # as if nobody had collected it yet: marking it is the write a full disk refuses
        with full_disk():
            status = await client.call_tool("gemini-status", {"jobId": job["job_id"]})
            waited = await client.call_tool("gemini-wait", {"jobId": job["job_id"]})
        again = await call_json(client, "gemini-status", {"jobId": job["job_id"]})
    for reply in (status, waited):
        assert not reply.is_error, text_of(reply)
        assert reply.structured_content is not None and reply.structured_content["state"] == "done"
        assert reply.structured_content["result"] == "Scripted answer to: kept"
    assert again["state"] == "done" and collected.is_file()  # marked once the disk has room again


async def test_cancelling_a_job_on_a_full_state_dir_stops_it_and_its_end_is_recorded_once_there_is_room(
    relay: InMemory,
) -> None:
    relay.backend.queue(Script(("partial",), hold=anyio.Event()))  # never released: only the cancel ends it
    async with relay.client(**JOBS) as client:
        job = await call_json(client, "gemini-run", {"prompt": "long"})
        with full_disk():
            cancelled = await client.call_tool("gemini-cancel", {"jobId": job["job_id"]})
        status = await call_json(client, "gemini-wait", {"jobId": job["job_id"], "wait": 10})
    assert not cancelled.is_error, text_of(cancelled)
    assert status["state"] == "cancelled" and status["result"] == "partial"
