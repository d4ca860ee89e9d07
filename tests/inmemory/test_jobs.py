"""The jobs toolset in memory: an idempotency key names one job (the same request gets it again, another request is
refused), and with the jobs toolset on the synchronous tools answer as before. What only processes show (a job
outliving its client, its server or its host; cancels reaching a CLI's process group) stays in
tests/test_server_jobs.py and tests/host/."""

from __future__ import annotations

import pytest

from tests.inmemory.conftest import InMemory, text_of
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
