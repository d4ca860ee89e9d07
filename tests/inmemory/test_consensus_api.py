"""gemini-consensus on the real api backend in memory (google-genai over HTTP to the emulator, which answers each
model its own way): two models answer and one synthesis call, asked for JSON with the API's response schema, tags
each finding by who raised it, with the usage of all three summed; a review ends with a verdict; a model the API
fails is reported, or replaced from the fallback chain; a synthesis whose JSON does not validate gives the answers
untagged; a dryRun counts tokens with the API and sends no generate request. The panel's own rules on the scripted
backend: test_consensus.py and test_consensus_tagged.py; the real Gemini CLI and an MCP task:
tests/test_server_consensus.py."""

from __future__ import annotations

import json

import pytest

from tests.consensus_panel import (
    AGAINST,
    FLASH,
    JUDGE,
    LITE,
    PANEL,
    PRO,
    REVIEW,
    assert_judge_saw_both_answers,
    assert_tagged,
    assert_two_answers_and_a_synthesis_naming_them,
    by_model,
    data_of,
    generate_requests,
    prompt_of,
)
from tests.fakes.fake_gemini_api import FakeGeminiApi
from tests.inmemory.conftest import InMemory, on_the_api, text_of

pytestmark = pytest.mark.anyio


async def test_on_the_api_backend_two_models_answer_and_the_synthesis_names_them(
    relay: InMemory, emulator: FakeGeminiApi
) -> None:
    by_model(emulator, "Flash: no, wait for Monday.")
    async with relay.client(**REVIEW, **on_the_api(emulator)) as client:
        result = await client.call_tool("gemini-consensus", PANEL)
    assert_two_answers_and_a_synthesis_naming_them(data_of(result))
    models = sorted(r.path.split("/models/")[1].split(":")[0] for r in generate_requests(emulator))
    assert models == sorted([PRO, FLASH, JUDGE])
    (judge,) = [r for r in generate_requests(emulator) if JUDGE in r.path]
    assert judge.kind == "schema"  # asked with the API's response schema
    assert_judge_saw_both_answers(prompt_of(judge))
    assert f"## Found by some\n\n- Nobody is on call over the weekend. — {AGAINST}" in text_of(result)


async def test_on_the_api_backend_a_review_ends_with_a_verdict(relay: InMemory, emulator: FakeGeminiApi) -> None:
    by_model(emulator, "Flash: no, wait for Monday.")
    async with relay.client(**REVIEW, **on_the_api(emulator)) as client:
        result = await client.call_tool("gemini-consensus", {**PANEL, "review": True})
    assert_tagged(data_of(result), review=True)
    assert "**Verdict: fix first**" in text_of(result)


async def test_on_the_api_backend_a_failing_model_is_replaced_from_the_fallback_chain(
    relay: InMemory, emulator: FakeGeminiApi
) -> None:
    judge = {
        "findings": [{"text": "Wait.", "found_by": [f"{LITE} (against)"]}],
        "disagreements": [],
        "recommendation": "Wait.",
    }
    by_model(emulator, 503, judge, **{LITE: "Lite: wait for Monday."})
    async with relay.client(**REVIEW, **on_the_api(emulator), GEMINI_RELAY_CONSENSUS_FALLBACK=LITE) as client:
        result = await client.call_tool("gemini-consensus", PANEL)
    data = data_of(result)
    assert data["panel"]["replaced"] == [{"missing": AGAINST, "stood_in": f"{LITE} (against)"}]
    lite = next(a for a in data["answers"] if a["model"] == LITE)
    assert lite["ok"] and lite["text"] == "Lite: wait for Monday." and lite["stands_in_for"] == AGAINST
    assert data["findings"] == [{"text": "Wait.", "found_by": [f"{LITE} (against)"], "agreement": "some"}]
    assert f"{AGAINST} failed" in text_of(result) and f"{LITE} (against) stood in" in text_of(result)


async def test_on_the_api_backend_a_synthesis_that_is_not_valid_json_gives_the_answers_untagged(
    relay: InMemory, emulator: FakeGeminiApi
) -> None:
    by_model(emulator, "Flash: no, wait for Monday.", "Both fine, ship [pro]")
    async with relay.client(**REVIEW, **on_the_api(emulator)) as client:
        result = await client.call_tool("gemini-consensus", {**PANEL, "review": True})
    data = data_of(result)
    assert data["tagged"] is False and "not JSON" in data["untagged_because"]
    assert data["findings"] == [] and data["verdict"] is None
    assert "Pro: yes, ship it." in text_of(result) and "Flash: no, wait for Monday." in text_of(result)


async def test_on_the_api_backend_a_failing_model_is_reported_and_the_synthesis_goes_on(
    relay: InMemory, emulator: FakeGeminiApi
) -> None:
    by_model(emulator, 404)
    async with relay.client(**REVIEW, **on_the_api(emulator)) as client:
        result = await client.call_tool("gemini-consensus", PANEL)
    data = data_of(result)
    flash = next(a for a in data["answers"] if a["model"] == FLASH)
    assert not flash["ok"] and flash["error"] and data["failed"] == [f"{FLASH} (against)"]
    (judge,) = [r for r in generate_requests(emulator) if JUDGE in r.path]
    assert data["synthesis"]["ok"] and "must not be cited" in json.dumps(judge.body)
    assert f"No answer from {FLASH} (against)" in text_of(result)


async def test_on_the_api_backend_a_dry_run_sends_no_generate_request(relay: InMemory, emulator: FakeGeminiApi) -> None:
    async with relay.client(**REVIEW, **on_the_api(emulator)) as client:
        result = await client.call_tool("gemini-consensus", {**PANEL, "dryRun": True})
    data = data_of(result)
    assert data["dry_run"] and [a["model"] for a in data["answers"]] == [PRO, FLASH]
    assert all(a["estimated_usd"] is not None for a in data["answers"])
    assert all(a["token_method"] == "counted" for a in data["answers"])  # the API's countTokens, as gemini-ask's
    assert "counted by the API" in data["token_method"]
    assert generate_requests(emulator) == []
