"""agy's quota on the jobs toolset, end to end: the server over stdio, the fake agy answering `/usage` (agy.md §1.7).
What the tools make of a reading is in tests/inmemory/test_quota.py; the cache and its clock in
tests/backends/agy/test_quota_cache.py."""

from __future__ import annotations

import anyio
import pytest
from mcp import Client

from tests.harness import LEFTOVER_TIMEOUT, Relay, agy_log, fresh_case, module_event_loop, shared_server
from tests.test_server_jobs import JOBS, call_json

pytestmark = pytest.mark.anyio


# The cases without an interval share one server; each counts the probes from where it started.
anyio_backend = module_event_loop()
agy_world, agy_client = shared_server("agy", JOBS, fake_agy=True)


def usage_probes(relay: Relay, since: int = 0) -> list[object]:
    """The `/usage` probes the fake agy saw, from its `since`th log entry on."""
    return [e["argv"] for e in agy_log(relay)[since:] if e.get("event") == "start" and "/usage" in str(e["argv"])]


async def test_the_quota_tool_and_the_quota_field_share_one_zero_token_probe(
    agy_world: Relay, agy_client: Client
) -> None:
    seen = len(agy_log(fresh_case(agy_world)))
    started = await call_json(agy_client, "gemini-run", {"prompt": "go"})
    quota = await call_json(agy_client, "gemini-quota", {"maxAge": 60})
    waited = await call_json(agy_client, "gemini-wait", {"jobId": started["job_id"], "wait": 60})
    assert "quota" not in started  # nothing was read yet: no field rather than a guess
    assert [(g["name"], g["level"], g["remaining_percent"]) for g in quota["groups"]] == [
        ("Gemini Models", "ok", 83),
        ("Claude and GPT models", "critical", 2),
    ]
    assert waited["quota"] == {
        "checked_at": quota["checked_at"],
        "groups": [{k: v for k, v in g.items() if k not in ("description", "buckets")} for g in quota["groups"]],
    }
    assert usage_probes(agy_world, seen) == [["--output-format", "json", "-p", "/usage"]]


async def test_with_an_interval_the_server_reads_the_quota_in_the_background(agy_relay: Relay) -> None:
    async with agy_relay.client(**JOBS, GEMINI_RELAY_USAGE_INTERVAL="60") as client:
        with anyio.fail_after(LEFTOVER_TIMEOUT):
            while not usage_probes(agy_relay):  # no call asked for it
                await anyio.sleep(0.02)
        quota = await call_json(client, "gemini-quota", {"maxAge": 3600})  # joins or reuses the background reading
    assert quota["groups"] and len(usage_probes(agy_relay)) == 1


async def test_without_an_interval_the_server_reads_no_quota_on_its_own(agy_world: Relay, agy_client: Client) -> None:
    seen = len(agy_log(fresh_case(agy_world)))
    started = await call_json(agy_client, "gemini-run", {"prompt": "go"})
    await call_json(agy_client, "gemini-wait", {"jobId": started["job_id"], "wait": 60})
    assert usage_probes(agy_world, seen) == []
