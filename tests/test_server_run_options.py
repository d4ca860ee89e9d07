"""gemini-run honours the gemini-ask options it takes and refuses the ones it cannot honour, before a job exists."""

from __future__ import annotations

import json

import pytest

from tests.harness import Relay
from tests.test_server_jobs import JOBS, call_json
from tests.test_server_surface import text_of

pytestmark = pytest.mark.anyio


async def test_max_response_length_reaches_the_model_as_the_same_instruction_gemini_ask_gives(relay: Relay) -> None:
    async with relay.client(**JOBS) as client:
        started = await call_json(client, "gemini-run", {"prompt": "explain", "maxResponseLength": 50})
        done = await call_json(client, "gemini-wait", {"jobId": started["job_id"]})
    assert done["state"] == "done", done
    sent = json.dumps(relay.main_requests()[0].body)
    assert "Keep your response under 50 words." in sent


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ({"chunkIndex": 2}, "Invalid arguments for gemini-run: chunkIndex: unknown argument (accepted: prompt,"),
        ({"chunkCacheKey": "0123abcd"}, "Invalid arguments for gemini-run: chunkCacheKey: unknown argument"),
        ({"changeMode": True, "jsonSchema": {"type": "object"}}, "changeMode and jsonSchema cannot be combined"),
    ],
)
async def test_options_gemini_run_cannot_honour_are_refused_before_a_job_exists(
    relay: Relay, args: dict[str, object], expected: str
) -> None:
    async with relay.client(**JOBS) as client:
        result = await client.call_tool("gemini-run", {"prompt": "p", **args})
        jobs = await call_json(client, "gemini-jobs", {})
    assert result.is_error
    assert text_of(result).startswith(f"Error executing gemini-run: {expected}")
    assert jobs.get("jobs", []) == []
    assert relay.api.requests == []
