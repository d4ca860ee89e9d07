"""The consensus synthesis as data: the judge's schema lets it cite only the models that answered; who agrees is
counted from its tags (all or some), each name once in panel order; a review needs a severity per finding and a
verdict of the closed vocabulary; anything that does not validate is reported as problems, never half-read."""

from __future__ import annotations

import json

from gemini_relay.content.consensus_rounds import Member, Outcome, panel_report, parse_chain
from gemini_relay.content.consensus_synthesis import Tagged, read_synthesis, synthesis_prompt, synthesis_schema
from gemini_relay.core.vocabulary import BackendName, Severity, Verdict
from gemini_relay.tools.review.consensus_schema import CONSENSUS

CLI = BackendName("gemini")
LABELS = ["pro", "flash (against)", "lite"]
ANSWER = {
    "findings": [
        {"text": " A ", "found_by": ["lite", "pro", "flash (against)", "pro"], "severity": "high"},
        {"text": "B", "found_by": ["lite"], "severity": "low"},
    ],
    "disagreements": [
        {"topic": "T", "positions": [{"position": "x", "held_by": ["pro"]}, {"position": "y", "held_by": ["lite"]}]}
    ],
    "recommendation": "R",
    "verdict": "redesign",
}


def test_the_verdicts_and_severities_the_tool_declares_are_the_closed_vocabulary() -> None:
    assert [v.value for v in Verdict] == ["ship", "fix_first", "redesign"]
    assert CONSENSUS["properties"]["verdict"]["enum"] == [*(v.value for v in Verdict), None]
    assert CONSENSUS["properties"]["findings"]["items"]["properties"]["severity"]["enum"] == [s.value for s in Severity]
    review = synthesis_schema(LABELS, review=True)
    assert review["properties"]["verdict"]["enum"] == [v.value for v in Verdict]


def test_agreement_is_counted_from_the_tags_each_name_once_in_panel_order() -> None:
    read = read_synthesis(None, json.dumps(ANSWER), LABELS, review=True)
    assert isinstance(read, Tagged)
    assert read.findings == [
        {"text": "A", "found_by": ["pro", "flash (against)", "lite"], "agreement": "all", "severity": "high"},
        {"text": "B", "found_by": ["lite"], "agreement": "some", "severity": "low"},
    ]
    assert read.verdict is Verdict.REDESIGN and read.recommendation == "R"
    assert read.disagreements[0]["positions"][1] == {"position": "y", "held_by": ["lite"]}


def test_the_backend_s_parsed_json_is_read_as_it_is() -> None:
    read = read_synthesis(ANSWER, "ignored", LABELS, review=False, has_value=True)
    assert isinstance(read, Tagged) and read.verdict is None and "severity" not in read.findings[0]


def test_an_unusable_answer_is_its_problems_never_a_half_read_synthesis() -> None:
    assert read_synthesis(None, "The models agree.", LABELS, review=False) == ["the synthesis answer is not JSON"]
    stranger = {**ANSWER, "findings": [{"text": "A", "found_by": ["gpt-5"], "severity": "high"}]}
    problems = read_synthesis(stranger, "", LABELS, review=True, has_value=True)
    assert isinstance(problems, list) and any("found_by" in p for p in problems)
    one_sided = {**ANSWER, "disagreements": [{"topic": "T", "positions": [{"position": "x", "held_by": ["pro"]}]}]}
    assert isinstance(read_synthesis(one_sided, "", LABELS, review=True, has_value=True), list)
    no_severity = {**ANSWER, "findings": [{"text": "A", "found_by": ["pro"]}]}
    assert isinstance(read_synthesis(no_severity, "", LABELS, review=True, has_value=True), list)
    assert isinstance(read_synthesis(no_severity, "", LABELS, review=False, has_value=True), Tagged)


def test_the_judge_is_told_who_answered_who_did_not_and_not_to_reconcile() -> None:
    prompt = synthesis_prompt("Q?", [("pro", "for", "Yes.")], ["flash"], review=True)
    assert '<answer model="pro" stance="for">\nYes.\n</answer>' in prompt
    assert "must not be cited: flash" in prompt and "Do not reconcile them" in prompt
    assert '"pro"' in prompt and "fix_first" in prompt
    assert "fix_first" not in synthesis_prompt("Q?", [("pro", "none", "Yes.")], [], review=False)


def test_a_chain_entry_names_a_backend_only_when_its_prefix_is_one() -> None:
    assert parse_chain(" flash , api:pro,,x:y", ["api", "gemini"]) == [(None, "flash"), ("api", "pro"), (None, "x:y")]


def test_the_panel_says_who_answered_who_stood_in_for_whom_and_who_is_missing() -> None:
    pro, flash = Member("pro", CLI, label="pro"), Member("flash", CLI, label="flash")
    outcomes = [
        Outcome(pro, 1, error="down"),
        Outcome(flash, 1, error="empty"),
        Outcome(Member("lite", CLI, label="lite", stands_in_for="pro"), 1, error="down too"),
        Outcome(Member("mini", CLI, label="mini", stands_in_for="flash"), 1, text="M"),
    ]
    assert panel_report(outcomes) == {
        "answered": ["mini"],
        "replaced": [{"missing": "flash", "stood_in": "mini"}],
        "missing": ["pro"],
    }
