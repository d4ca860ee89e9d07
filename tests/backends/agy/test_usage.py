"""The /usage quota probe: envelope decoding, levels, the model-turn guard and caching (agy.md §1.7)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import anyio
import pytest

from gemini_relay.backends.agy.backend import AgyBackend
from gemini_relay.backends.agy.quota_cache import UsageCache
from gemini_relay.backends.agy.usage import (
    CRITICAL_FRACTION,
    LOW_FRACTION,
    ModelTurnError,
    Thresholds,
    UsageProbeError,
    group_for_model,
    level_for,
    parse_usage,
    probe_usage,
)
from gemini_relay.core.vocabulary import QuotaLevel
from gemini_relay.errors import BackendUnavailable
from tests.backends.agy.conftest import AgyWorld, Clock

NOW = datetime(2026, 10, 2, 12, 0, tzinfo=UTC)
# agy.md §1.7's envelope, as printed there (ids, names and windows from captures of 1.2.1 and 1.2.14).
SAMPLE = """{"status":"SUCCESS","num_turns":0,"conversation_id":"",
 "command":{"name":"usage","data":{"groups":[
   {"name":"Gemini Models","description":"...","buckets":[
      {"id":"gemini-weekly","name":"Weekly Limit Remaining","window":"weekly","remaining_fraction":1,"reset_time":"2026-10-09T15:00:14Z"},
      {"id":"gemini-5h","name":"Five Hour Limit Remaining","window":"5h","remaining_fraction":0.835,"reset_time":"2026-10-02T16:59:24Z"}]},
   {"name":"Claude and GPT models","buckets":[{"id":"3p-5h","window":"5h","remaining_fraction":0.02,"reset_time":"2026-10-02T16:59:24Z"}]}]}}}"""  # noqa: E501


def usage_json(groups: object, **top: object) -> str:
    return json.dumps({"status": "SUCCESS", "num_turns": 0, "conversation_id": "", **top,
                       "command": {"name": "usage", "data": {"groups": groups}}})  # fmt: skip


def bucket(fraction: float | None, reset: str = "2026-10-02T16:59:24Z", bid: str = "b") -> dict[str, object]:
    made: dict[str, object] = {"id": bid, "name": bid, "window": "5h", "reset_time": reset}
    if fraction is not None:
        made["remaining_fraction"] = fraction
    return made


def test_the_documented_envelope_decodes_to_groups_with_levels() -> None:
    gemini, third_party = parse_usage(SAMPLE)
    assert gemini.name == "Gemini Models" and [b.id for b in gemini.buckets] == ["gemini-weekly", "gemini-5h"]
    binding = gemini.binding(NOW)
    assert binding is not None and binding.id == "gemini-5h"
    assert gemini.level(NOW) is QuotaLevel.OK
    assert third_party.level(NOW) is QuotaLevel.CRITICAL
    assert (
        gemini.describe(NOW) == "Gemini Models: ok — Five Hour Limit Remaining 83.5% left, resets 2026-10-02T16:59:24Z"
    )


@pytest.mark.parametrize(
    ("fraction", "level"),
    [
        (-0.1, QuotaLevel.EXHAUSTED),
        (0.0, QuotaLevel.EXHAUSTED),
        (CRITICAL_FRACTION - 0.001, QuotaLevel.CRITICAL),
        (CRITICAL_FRACTION, QuotaLevel.LOW),
        (LOW_FRACTION - 0.001, QuotaLevel.LOW),
        (LOW_FRACTION, QuotaLevel.OK),
        (1.0, QuotaLevel.OK),
    ],
)
def test_levels_follow_the_5_and_25_percent_thresholds(fraction: float, level: QuotaLevel) -> None:
    assert (CRITICAL_FRACTION, LOW_FRACTION) == (0.05, 0.25)
    assert level_for(fraction) is level


def test_a_bucket_past_its_reset_time_counts_as_full() -> None:
    (group,) = parse_usage(usage_json([{"name": "Gemini", "buckets": [bucket(0.0, "2026-10-01T00:00:00Z")]}]))
    assert group.level(NOW) is QuotaLevel.OK


def test_a_bucket_without_a_fraction_is_skipped() -> None:
    (group,) = parse_usage(usage_json([{"name": "Gemini", "buckets": [bucket(None, bid="off"), bucket(0.01)]}]))
    assert [b.id for b in group.buckets] == ["b"] and group.level(NOW) is QuotaLevel.CRITICAL


def test_an_empty_group_list_is_valid() -> None:
    assert parse_usage(usage_json([])) == ()


@pytest.mark.parametrize(
    "stdout",
    [
        usage_json(None),
        json.dumps({"status": "SUCCESS", "num_turns": 0, "conversation_id": "", "command": {"name": "usage"}}),
        usage_json([{"name": "Gemini", "buckets": [bucket(None)]}]),
        json.dumps({"status": "ERROR", "error": "not signed in", "num_turns": 0, "conversation_id": ""}),
        "not json",
    ],
)
def test_missing_groups_fractionless_groups_errors_and_noise_are_probe_errors(stdout: str) -> None:
    with pytest.raises(UsageProbeError):
        parse_usage(stdout)


def test_a_model_turn_is_refused_as_a_probe() -> None:
    turn = json.dumps({"status": "SUCCESS", "num_turns": 1, "conversation_id": "c-1", "response": "usage is..."})
    with pytest.raises(ModelTurnError):
        parse_usage(turn)


def test_only_gemini_models_map_to_the_single_gemini_group() -> None:
    groups = parse_usage(SAMPLE)
    found = group_for_model(groups, "gemini-3.8-flash-high")
    assert found is not None and found.name == "Gemini Models"
    assert group_for_model(groups, "claude-sonnet-4-6") is None
    assert group_for_model(groups + groups, "gemini-3.8-flash-high") is None  # ambiguous


def probe_starts(world: AgyWorld) -> list[list[str]]:
    return [e["argv"] for e in world.log() if e["event"] == "start" and "/usage" in e["argv"]]


@pytest.mark.anyio
async def test_the_probe_runs_the_exact_argv_and_is_cached(world: AgyWorld) -> None:
    backend = world.backend()
    with anyio.fail_after(20):
        first = await backend.usage()
        second = await backend.usage()
    assert first.ok and second is first
    assert [g.name for g in first.groups] == ["Gemini Models", "Claude and GPT models"]
    assert probe_starts(world) == [["--output-format", "json", "-p", "/usage"]]


@pytest.mark.anyio
async def test_an_agy_that_runs_usage_as_a_prompt_disables_the_probe_for_the_process(world: AgyWorld) -> None:
    world.install(scenario="usage_turn")
    backend = world.backend()
    cache = UsageCache()
    binary = backend.require_binary()
    with anyio.fail_after(20):
        first = await cache.read(lambda: probe_usage(binary, backend.env(), world.project))
        second = await cache.read(lambda: probe_usage(binary, backend.env(), world.project), max_age=0)
    assert first.error is not None and "model prompt" in first.error
    assert second.error == first.error and len(probe_starts(world)) == 1


@pytest.mark.anyio
async def test_a_failed_probe_is_reported_and_not_retried_at_once(world: AgyWorld) -> None:
    world.install(usage="null")
    backend = world.backend()
    with anyio.fail_after(20):
        first = await backend.usage()
        second = await backend.usage()
    assert not first.ok and first.error is not None and "groups" in first.error
    assert second is first and len(probe_starts(world)) == 1


def test_the_levels_follow_the_thresholds_the_operator_set() -> None:
    mine = Thresholds(low=0.4, critical=0.1)
    assert level_for(0.3) is QuotaLevel.OK and level_for(0.3, mine) is QuotaLevel.LOW
    assert level_for(0.08) is QuotaLevel.LOW and level_for(0.08, mine) is QuotaLevel.CRITICAL


@pytest.mark.anyio
async def test_the_quota_report_has_each_group_with_its_level_tightest_window_and_buckets(world: AgyWorld) -> None:
    backend = world.backend(GEMINI_RELAY_USAGE_LOW="90")
    with anyio.fail_after(20):
        report = await backend.quota(60)
    gemini, others = report.to_json()["groups"]
    assert gemini == {
        "name": "Gemini Models",
        "level": "low",  # 83.5 % left is under the operator's 90 %
        "remaining_percent": 83,  # rounded down
        "window": "5h",
        "reset_time": "2099-10-02T16:59:24Z",
        "description": "Quota for Gemini models",
        "buckets": [
            {"id": "gemini-weekly", "name": "Weekly Limit Remaining", "window": "weekly", "remaining_fraction": 1.0,
             "reset_time": "2099-10-09T15:00:14Z", "refilled": False},
            {"id": "gemini-5h", "name": "Five Hour Limit Remaining", "window": "5h", "remaining_fraction": 0.835,
             "reset_time": "2099-10-02T16:59:24Z", "refilled": False},
        ],
    }  # fmt: skip
    assert others["level"] == "critical" and others["remaining_percent"] == 2
    assert report.compact()["groups"][0] == {
        "name": "Gemini Models", "level": "low", "remaining_percent": 83, "window": "5h",
        "reset_time": "2099-10-02T16:59:24Z",
    }  # fmt: skip
    assert datetime.fromisoformat(report.checked_at).tzinfo is not None


@pytest.mark.anyio
async def test_a_window_whose_reset_has_passed_counts_as_full_and_says_refilled(world: AgyWorld) -> None:
    world.install(usage=json.dumps([{"name": "Gemini Models", "buckets": [bucket(0.0, "2020-01-01T00:00:00Z")]}]))
    with anyio.fail_after(20):
        group = (await world.backend().quota(60)).to_json()["groups"][0]
    assert group["level"] == "ok" and group["remaining_percent"] == 100 and group["buckets"][0]["refilled"] is True


@pytest.mark.anyio
async def test_a_probe_that_fails_is_an_unavailable_quota_not_an_empty_one(world: AgyWorld) -> None:
    world.install(scenario="signed_out")
    with anyio.fail_after(20), pytest.raises(BackendUnavailable, match="agy could not report its quota"):
        await world.backend().quota(60)


@pytest.mark.anyio
async def test_the_cached_quota_never_probes_and_is_there_once_a_reading_was_taken(world: AgyWorld) -> None:
    backend = world.backend()
    assert backend.cached_quota() is None and probe_starts(world) == []
    with anyio.fail_after(20):
        await backend.quota(60)
    cached = backend.cached_quota()
    assert cached is not None and [g.name for g in cached.groups] == ["Gemini Models", "Claude and GPT models"]
    assert len(probe_starts(world)) == 1


@pytest.mark.anyio
async def test_a_reading_older_than_twice_the_interval_or_ten_minutes_is_not_trusted(world: AgyWorld) -> None:
    low = json.dumps([{"name": "Gemini Models", "buckets": [bucket(0.1, "2099-01-01T00:00:00Z")]}])
    world.install(usage=low)
    clock = Clock()
    backend = AgyBackend(world.settings(GEMINI_RELAY_USAGE_INTERVAL="10m"), usage=UsageCache(clock))
    with anyio.fail_after(20):
        await backend.quota(60)
    assert backend.quota_low_for("gemini-3.8-flash-high") is not None
    clock.now += 1199  # trusted for 2 × 10 min
    assert backend.cached_quota() is not None and backend.quota_low_for("gemini-3.8-flash-high") is not None
    clock.now += 1
    assert backend.cached_quota() is None and backend.quota_low_for("gemini-3.8-flash-high") is None  # fails open


@pytest.mark.anyio
async def test_the_background_refresh_is_off_by_default(world: AgyWorld) -> None:
    with anyio.fail_after(5):
        await world.backend().refresh_quota()  # returns at once
    assert probe_starts(world) == []
