"""The quota surface of the jobs toolset (seed 001's agy_usage and its `quota?` field), in memory: gemini-quota with
max_age and structured groups, the compact `quota` on gemini-run / -status / -wait from the cache only, a plain
answer on a backend without a quota, and the server's background refresh. A scripted backend stands in for agy's
reading (tests/backends/agy/ drive the real probe, cache and refresh against the fake agy)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import anyio
import pytest

from gemini_relay.app import build_deps, explained_deps
from gemini_relay.backends.capabilities import QuotaGroupReading, QuotaReport, QuotaWindow
from gemini_relay.core.vocabulary import BackendName, QuotaLevel
from gemini_relay.tools.jobs.quota import refresh_quota
from tests.inmemory.conftest import InMemory, text_of
from tests.inmemory.scripted import ScriptedBackend
from tests.inmemory.test_model_view import valid
from tests.test_server_jobs import JOBS, call_json

pytestmark = pytest.mark.anyio
BOUND = 10.0
FIVE_HOURS = QuotaWindow("gemini-5h", "Five Hour Limit Remaining", "5h", 0.2, "2099-10-02T16:59:24Z", refilled=False)
REPORT = QuotaReport(
    "2026-12-07T09:00:00Z",
    (
        QuotaGroupReading(
            "Gemini Models", "Gemini models", QuotaLevel.LOW, 20, "5h", FIVE_HOURS.reset_time, (FIVE_HOURS,)
        ),
    ),
)


@dataclass
class QuotaBackend(ScriptedBackend):
    """The scripted backend with a quota reading: `cached` is what the cache holds (None: nothing trusted yet)."""

    cached: QuotaReport | None = None
    max_ages: list[float] = field(default_factory=list[float])
    refreshing: anyio.Event = field(default_factory=anyio.Event)

    def quota_low_for(self, model: str | None) -> str | None:
        return None

    def cached_quota(self) -> QuotaReport | None:
        return self.cached

    async def quota(self, max_age: float) -> QuotaReport:
        self.max_ages.append(max_age)
        self.cached = REPORT
        return REPORT

    async def refresh_quota(self) -> None:
        self.refreshing.set()
        await anyio.sleep_forever()


async def test_gemini_quota_answers_structured_groups_and_a_short_table(relay: InMemory) -> None:
    backend = relay.backend = QuotaBackend()
    async with relay.client(**JOBS) as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}["gemini-quota"]
        result = await client.call_tool("gemini-quota", {"maxAge": 30})
        await client.call_tool("gemini-quota", {"max_age": 15})  # the seed's spelling
        await client.call_tool("gemini-quota", {})
    assert not result.is_error and backend.max_ages == [30, 15, 60]
    data: dict[str, Any] = result.structured_content or {}
    assert data["backend"] == "gemini" and data["checked_at"] == "2026-12-07T09:00:00Z"
    assert data["groups"] == [REPORT.groups[0].to_json()]
    assert data["groups"][0]["level"] == "low" and data["groups"][0]["buckets"][0]["remaining_fraction"] == 0.2
    assert "| Gemini Models | low | 20% | 5h | 2099-10-02T16:59:24Z |" in text_of(result)
    assert listed.annotations is not None and listed.annotations.read_only_hint is True
    assert listed.output_schema is not None and "groups" in listed.output_schema["properties"]
    valid(listed.output_schema, data)


async def test_on_a_backend_without_a_quota_gemini_quota_says_so_plainly(relay: InMemory) -> None:
    async with relay.client(**JOBS) as client:
        result = await client.call_tool("gemini-quota", {})
    assert not result.is_error
    assert "reports no quota reading" in text_of(result)
    assert result.structured_content is not None and result.structured_content["groups"] == []


async def test_run_status_and_wait_carry_the_compact_quota_the_server_holds(relay: InMemory) -> None:
    relay.backend = QuotaBackend(cached=REPORT)
    async with relay.client(**JOBS) as client:
        schemas = {t.name: t.output_schema or {} for t in (await client.list_tools()).tools}
        started = await call_json(client, "gemini-run", {"prompt": "go"})
        waited = await call_json(client, "gemini-wait", {"jobId": started["job_id"], "wait": BOUND})
        status = await call_json(client, "gemini-status", {"jobId": started["job_id"]})
        inline = await call_json(client, "gemini-run", {"prompt": "inline", "wait": BOUND})
    compact = {
        "checked_at": "2026-12-07T09:00:00Z",
        "groups": [{"name": "Gemini Models", "level": "low", "remaining_percent": 20, "window": "5h",
                    "reset_time": "2099-10-02T16:59:24Z"}],
    }  # fmt: skip
    assert waited["state"] == "done" and inline["state"] == "done"
    assert started["quota"] == waited["quota"] == status["quota"] == inline["quota"] == compact
    for tool, data in (("gemini-run", started), ("gemini-wait", waited), ("gemini-status", status)):
        valid(schemas[tool], data)


@pytest.mark.parametrize("backend", [QuotaBackend(), ScriptedBackend()], ids=["no reading yet", "no quota"])
async def test_without_a_trusted_reading_the_results_have_no_quota_field(
    relay: InMemory, backend: ScriptedBackend
) -> None:
    relay.backend = backend
    async with relay.client(**JOBS) as client:
        started = await call_json(client, "gemini-run", {"prompt": "go"})
        waited = await call_json(client, "gemini-wait", {"jobId": started["job_id"], "wait": BOUND})
        status = await call_json(client, "gemini-status", {"jobId": started["job_id"]})
    assert waited["state"] == "done"
    assert "quota" not in started and "quota" not in waited and "quota" not in status


async def test_the_server_refreshes_the_quota_in_the_background_until_it_stops(relay: InMemory) -> None:
    backend = QuotaBackend()
    deps = build_deps(relay.settings(), backends={BackendName("gemini"): backend})
    with anyio.fail_after(BOUND):
        async with anyio.create_task_group() as tg:
            tg.start_soon(refresh_quota, deps)
            await backend.refreshing.wait()
            tg.cancel_scope.cancel()  # the server stopping stops it


async def test_a_misconfigured_server_refreshes_nothing(relay: InMemory) -> None:
    backend = QuotaBackend()
    deps = explained_deps({**relay.env, "GEMINI_MCP_TIMEOUT": "soon"}, backends={BackendName("gemini"): backend})
    assert deps.problems
    with anyio.fail_after(BOUND):
        await refresh_quota(deps)  # returns at once
    assert not backend.refreshing.is_set()
