"""gemini-run in memory: it honours the gemini-ask options it takes (maxResponseLength reaches the model as the same
instruction) and refuses the ones it cannot honour before a job exists."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from tests.inmemory.conftest import InMemory, text_of

pytestmark = pytest.mark.anyio
JOBS = {"GEMINI_RELAY_TOOLSETS": "jobs"}


async def test_max_response_length_reaches_the_model_as_the_same_instruction_gemini_ask_gives(
    relay: InMemory,
) -> None:
    async with relay.client(**JOBS) as client:
        asked = await client.call_tool("gemini-ask", {"prompt": "explain", "maxResponseLength": 50})
        started = await client.call_tool("gemini-run", {"prompt": "explain", "maxResponseLength": 50})
        assert not asked.is_error and not started.is_error, text_of(started)
        job = started.structured_content
        assert job is not None
        with anyio.fail_after(10):
            waited = await client.call_tool("gemini-wait", {"jobId": job["job_id"], "wait": 10})
    assert waited.structured_content is not None and waited.structured_content["state"] == "done"
    ask_spec, run_spec = relay.backend.specs
    assert "Keep your response under 50 words." in run_spec.prompt
    assert run_spec.prompt == ask_spec.prompt


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ({"chunkIndex": 2}, "Invalid arguments for gemini-run: chunkIndex: unknown argument (accepted: prompt,"),
        ({"chunkCacheKey": "0123abcd"}, "Invalid arguments for gemini-run: chunkCacheKey: unknown argument"),
        ({"changeMode": True, "jsonSchema": {"type": "object"}}, "changeMode and jsonSchema cannot be combined"),
    ],
)
async def test_options_gemini_run_cannot_honour_are_refused_before_a_job_exists(
    relay: InMemory, args: dict[str, Any], expected: str
) -> None:
    async with relay.client(**JOBS) as client:
        result = await client.call_tool("gemini-run", {"prompt": "p", **args})
        jobs = await client.call_tool("gemini-jobs", {})
    assert result.is_error
    assert text_of(result).startswith(f"Error executing gemini-run: {expected}")
    assert jobs.structured_content is not None and jobs.structured_content.get("jobs", []) == []
    assert relay.backend.specs == []
