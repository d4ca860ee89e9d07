"""Upstream text the relay cannot encode as it arrived (a lone UTF-16 surrogate escape) is decoded with U+FFFD in
its place: the run finishes and the whole answer arrives, foreground and as a durable job (fake agy, end to end)."""

from __future__ import annotations

import json

import pytest
from mcp import Client

from tests.harness import Relay, fresh_case, module_event_loop, shared_server
from tests.test_server_jobs import JOBS, call_json
from tests.test_server_surface import text_of

pytestmark = pytest.mark.anyio

# Both cases on one server over the fake agy (the jobs toolset on: the foreground ask is the same with it).
anyio_backend = module_event_loop()
agy_world, agy_client = shared_server("agy", JOBS, fake_agy=True)
EXPECTED = "half a pair \ufffd then the rest of the answer"


async def test_a_lone_surrogate_in_a_streamed_answer_becomes_a_replacement_character(
    agy_world: Relay, agy_client: Client
) -> None:
    fresh_case(agy_world)
    result = await agy_client.call_tool("gemini-ask", {"prompt": "[[agy:surrogate]] hi"})
    assert not result.is_error, text_of(result)
    assert text_of(result).startswith(f"Gemini response:\n{EXPECTED}\n\n🧵")


async def test_a_job_whose_answer_holds_a_lone_surrogate_finishes_with_the_whole_answer(
    agy_world: Relay, agy_client: Client
) -> None:
    fresh_case(agy_world)
    started = await call_json(agy_client, "gemini-run", {"prompt": "[[agy:surrogate]] hi"})
    done = await call_json(agy_client, "gemini-wait", {"jobId": started["job_id"]})
    assert done["state"] == "done", json.dumps(done)
    assert done["result"].startswith(EXPECTED)
