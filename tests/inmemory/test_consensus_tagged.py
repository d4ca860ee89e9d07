"""gemini-consensus where disagreement is the product, in memory: each model answers once and on its own; the judge's
JSON comes back as findings tagged by who raised them (all or some, named), the disagreements with who holds each
position, and a review's verdict; a judge whose JSON does not validate gives an honest untagged result; a model that
fails (an error, an empty answer) is replaced by the next of the fallback chain (the call's or the environment's),
and the result says who was missing and who stood in. The same on the api backend and the Gemini CLI:
tests/inmemory/test_consensus_api.py and tests/test_server_consensus.py."""

from __future__ import annotations

import json
from typing import Any

import anyio
import mcp_types as types
import pytest

from gemini_relay.core.vocabulary import Verdict
from gemini_relay.errors import RunFailed
from tests.inmemory.conftest import InMemory, text_of
from tests.inmemory.scripted import Script, answer
from tests.inmemory.test_consensus import QUESTION, REVIEW, data_of, panel_specs, synthesis_specs

pytestmark = pytest.mark.anyio
DIFF = "Review this change: the cache now never expires."
REVIEWED = {
    "findings": [
        {"text": "Entries never expire: memory grows without bound.", "found_by": ["pro", "flash"], "severity": "high"},
        {"text": "The new test sleeps.", "found_by": ["flash"], "severity": "low"},
    ],
    "disagreements": [
        {
            "topic": "Whether a TTL belongs in this change",
            "positions": [
                {"position": "Add a TTL now.", "held_by": ["pro"]},
                {"position": "A TTL can follow.", "held_by": ["flash"]},
            ],
        }
    ],
    "recommendation": "Bound the cache before merging.",
    "verdict": "fix_first",
}


async def reviewed(relay: InMemory, pro: str, flash: str, synthesis: Any) -> types.CallToolResult:
    """A review of DIFF by pro and flash, answering these, and a judge answering `synthesis` (a value as JSON)."""
    relay.backend.by_model["pro"], relay.backend.by_model["flash"] = answer(pro), answer(flash)
    relay.backend.by_model["judge"] = answer(synthesis if isinstance(synthesis, str) else json.dumps(synthesis))
    async with relay.client(**REVIEW) as client:
        return await client.call_tool("gemini-consensus", {"prompt": DIFF, "review": True, "synthesisModel": "judge"})


async def test_a_review_tags_each_finding_by_who_raised_it_keeps_disagreements_apart_and_ends_with_a_verdict(
    relay: InMemory,
) -> None:
    pro, flash = "High: entries never expire. Add a TTL now. Verdict: fix", "High: unbounded. Low: the test sleeps."
    result = await reviewed(relay, pro, flash, REVIEWED)
    data = data_of(result)
    assert data["tagged"] and data["review"] and data["verdict"] == Verdict.FIX_FIRST.value
    assert data["findings"] == [
        {
            "text": "Entries never expire: memory grows without bound.",
            "found_by": ["pro", "flash"],
            "agreement": "all",
            "severity": "high",
        },
        {"text": "The new test sleeps.", "found_by": ["flash"], "agreement": "some", "severity": "low"},
    ]
    assert data["disagreements"] == REVIEWED["disagreements"]
    text = text_of(result)
    assert "**Verdict: fix first**" in text
    assert "## Found by all\n\n- (high) Entries never expire" in text
    assert "## Found by some\n\n- (low) The new test sleeps. — flash" in text
    assert "- **Whether a TTL belongs in this change**: pro: Add a TTL now.; flash: A TTL can follow." in text
    # Independent answers, once each: every member saw the question alone, and no round asked them to converge.
    members = panel_specs(relay)
    assert sorted(s.model for s in members) == ["flash", "pro"]
    assert all("Verdict: ship" in s.prompt and "High:" not in s.prompt for s in members)
    (judge,) = synthesis_specs(relay)
    schema = judge.json_schema
    assert schema is not None and schema["properties"]["verdict"]["enum"] == [v.value for v in Verdict]
    assert schema["properties"]["findings"]["items"]["properties"]["found_by"]["items"]["enum"] == ["pro", "flash"]


async def test_a_question_has_no_verdict_and_its_findings_carry_no_severity(relay: InMemory) -> None:
    found = {"findings": [{"text": "Rust is faster.", "found_by": ["pro"]}], "disagreements": [], "recommendation": "-"}
    relay.backend.by_model["judge"] = answer(json.dumps(found))
    async with relay.client(**REVIEW) as client:
        data = data_of(await client.call_tool("gemini-consensus", {"prompt": QUESTION, "synthesisModel": "judge"}))
    assert data["verdict"] is None and not data["review"]
    assert data["findings"] == [{"text": "Rust is faster.", "found_by": ["pro"], "agreement": "some"}]
    (judge,) = synthesis_specs(relay)
    assert judge.json_schema is not None and "verdict" not in judge.json_schema["properties"]


@pytest.mark.parametrize(
    ("synthesis", "why"),
    [
        ("## Agreement\nBoth say fix it. [pro] [flash]", "not JSON"),
        ({**REVIEWED, "verdict": "maybe"}, "verdict"),
        ({**REVIEWED, "findings": [{"text": "x", "found_by": ["gpt-5"], "severity": "high"}]}, "found_by"),
        ({k: v for k, v in REVIEWED.items() if k != "verdict"}, "verdict"),
    ],
)
async def test_a_synthesis_whose_json_does_not_validate_gives_each_answer_untagged_and_says_so(
    relay: InMemory, synthesis: Any, why: str
) -> None:
    result = await reviewed(relay, "Pro's own review.", "Flash's own review.", synthesis)
    data = data_of(result)
    assert data["tagged"] is False and why in data["untagged_because"]
    assert data["findings"] == [] and data["disagreements"] == [] and data["verdict"] is None
    text = text_of(result)
    assert "No tagged synthesis" in text and "nothing is tagged or merged" in text
    assert "### pro" in text and "Pro's own review." in text and "Flash's own review." in text
    assert "Verdict" not in text and "Found by" not in text  # no tag the judge did not validly give


async def test_a_failing_model_is_replaced_by_the_next_of_the_call_s_fallback_chain(relay: InMemory) -> None:
    relay.backend.by_model["pro"] = Script(error=RunFailed("upstream 503: the model is overloaded"))
    relay.backend.by_model["lite"] = answer("Lite: keep Python.")
    async with relay.client(**REVIEW) as client:
        result = await client.call_tool(
            "gemini-consensus",
            {"prompt": QUESTION, "models": [{"model": "pro", "stance": "for"}, "flash"], "fallback": ["pro", "lite"]},
        )
    data = data_of(result)
    stood = next(a for a in data["answers"] if a["label"] == "lite (for)")
    assert stood["stands_in_for"] == "pro (for)" and stood["stance"] == "for" and stood["ok"]
    assert data["panel"] == {
        "answered": ["flash", "lite (for)"],
        "replaced": [{"missing": "pro (for)", "stood_in": "lite (for)"}],
        "missing": [],
    }
    assert data["failed"] == ["pro (for)"]
    assert [s.model for s in panel_specs(relay)].count("pro") == 1  # "pro", on the panel already, is no stand-in
    (judge,) = synthesis_specs(relay)
    assert '<answer model="lite (for)" stance="for">\nLite: keep Python.' in judge.prompt
    assert "must not be cited: pro (for)" in judge.prompt
    assert "⚠️ pro (for) failed (upstream 503: the model is overloaded); lite (for) stood in." in text_of(result)


async def test_an_empty_answer_is_a_failure_and_the_environment_s_chain_stands_in(relay: InMemory) -> None:
    relay.backend.by_model["flash"] = answer("   ")
    relay.backend.by_model["lite"] = answer("Lite's answer.")
    async with relay.client(**REVIEW, GEMINI_RELAY_CONSENSUS_FALLBACK="lite") as client:
        data = data_of(await client.call_tool("gemini-consensus", {"prompt": QUESTION}))
    flash = next(a for a in data["answers"] if a["label"] == "flash")
    assert not flash["ok"] and "without any answer text" in flash["error"]  # an empty answer is a failed run
    assert data["panel"]["replaced"] == [{"missing": "flash", "stood_in": "lite"}]


async def test_a_stand_in_that_fails_is_replaced_by_the_next_and_a_spent_chain_leaves_the_model_missing(
    relay: InMemory,
) -> None:
    for model in ("pro", "flash", "lite"):
        relay.backend.by_model[model] = Script(error=RunFailed(f"{model} is down"))
    relay.backend.by_model["mini"] = answer("Mini's answer.")
    async with relay.client(**REVIEW) as client:
        result = await client.call_tool("gemini-consensus", {"prompt": QUESTION, "fallback": ["lite", "mini"]})
    data = data_of(result)
    # Round one: lite for pro, mini for flash; lite failing, the spent chain leaves pro missing.
    assert data["panel"] == {
        "answered": ["mini"],
        "replaced": [{"missing": "flash", "stood_in": "mini"}],
        "missing": ["pro"],
    }
    assert data["failed"] == ["pro", "flash", "lite"]
    assert "⚠️ No answer from pro (pro is down); nobody stood in." in text_of(result)


async def test_a_fallback_model_no_backend_could_run_is_refused_before_any_job_exists(relay: InMemory) -> None:
    async with relay.client(**REVIEW) as client:
        result = await client.call_tool("gemini-consensus", {"prompt": QUESTION, "fallback": ["-rf"]})
    assert result.is_error and "model" in text_of(result)
    assert relay.backend.specs == []


async def test_a_collect_attaches_to_the_stand_in_s_job_and_bills_nothing_again(relay: InMemory) -> None:
    relay.backend.by_model["pro"] = Script(error=RunFailed("pro is down"))
    args = {"prompt": QUESTION, "fallback": ["lite"], "idempotencyKey": "decision-2"}
    async with relay.client(**REVIEW) as client:
        first = data_of(await client.call_tool("gemini-consensus", args))
        again = data_of(await client.call_tool("gemini-consensus", args))
    assert [a["job_id"] for a in again["answers"]] == [a["job_id"] for a in first["answers"]]
    assert [s.model for s in panel_specs(relay)].count("lite") == 1 and len(synthesis_specs(relay)) == 1


async def test_a_model_past_its_deadline_is_replaced_by_the_next_of_the_chain(relay: InMemory) -> None:
    relay.backend.by_model["pro"] = Script(deltas=("Half a thought",), hold=anyio.Event())  # only the deadline ends it
    relay.backend.by_model["lite"] = answer("Lite's answer.")
    async with relay.client(**REVIEW) as client:
        args = {"prompt": QUESTION, "fallback": ["lite"], "timeoutSeconds": 1}
        data = data_of(await client.call_tool("gemini-consensus", args))
    pro = next(a for a in data["answers"] if a["label"] == "pro")
    assert not pro["ok"] and "timed out" in pro["error"]
    assert data["panel"]["replaced"] == [{"missing": "pro", "stood_in": "lite"}]


async def test_a_failed_synthesis_is_made_again_by_a_model_that_answered_and_the_result_says_so(
    relay: InMemory,
) -> None:
    relay.backend.by_model["pro"], relay.backend.by_model["flash"] = answer("Pro's review."), answer("Flash's review.")
    relay.backend.by_model["judge"] = Script(error=RunFailed("upstream 503: the judge is overloaded"))
    async with relay.client(**REVIEW) as client:
        result = await client.call_tool("gemini-consensus", {"prompt": DIFF, "review": True, "synthesisModel": "judge"})
    assert not result.is_error, text_of(result)
    data = data_of(result)
    # pro answered first, so it judges next; its synthesis is the one given, and is tagged as any other.
    assert [s.model for s in synthesis_specs(relay)] == ["judge", "pro"]
    assert data["synthesis_replaced"] == [
        {"model": "judge", "backend": "gemini", "error": "upstream 503: the judge is overloaded"}
    ]
    assert data["synthesis"]["model"] == "pro" and data["synthesis"]["ok"]
    assert "⚠️ The synthesis failed (judge: upstream 503: the judge is overloaded); pro synthesised instead." in (
        text_of(result)
    )


async def test_when_every_judge_fails_the_answers_come_untagged_naming_each_failed_synthesis(relay: InMemory) -> None:
    relay.backend.by_model["pro"], relay.backend.by_model["flash"] = answer("Pro's review."), answer("Flash's review.")
    for model in ("judge", "pro", "flash"):
        relay.backend.judging[model] = Script(deltas=(), error=RunFailed(f"{model} cannot judge"))
    async with relay.client(**REVIEW) as client:
        result = await client.call_tool("gemini-consensus", {"prompt": DIFF, "review": True, "synthesisModel": "judge"})
    data = data_of(result)
    assert [s.model for s in synthesis_specs(relay)] == ["judge", "pro", "flash"]  # three judges at most
    assert data["tagged"] is False and [j["model"] for j in data["synthesis_replaced"]] == ["judge", "pro", "flash"]
    text = text_of(result)
    assert "pro: pro cannot judge" in text and "no other synthesis succeeded" in text
    assert "Pro's review." in text and "Flash's review." in text  # the answers, untagged, as each model gave it
