"""The consensus logic: each stance shapes its prompt, labels tell repeated models apart, the synthesis prompt cites
every answer by its label and names the models that gave none, and the fold sums the usage and cost of every call."""

from __future__ import annotations

from typing import get_args

from gemini_relay.content.consensus_rounds import (
    Member,
    Outcome,
    Stance,
    cost_of,
    dry_run,
    fold,
    label_members,
    member_prompt,
)
from gemini_relay.content.rate_card import load_rate_card
from gemini_relay.core.events import Usage
from gemini_relay.core.tokens import estimated
from gemini_relay.core.vocabulary import BackendName
from gemini_relay.tools.review.consensus import StanceName

API, CLI = BackendName("api"), BackendName("gemini")
USAGE = Usage(input_tokens=1000, output_tokens=200, thinking_tokens=50, total_tokens=1250)


def test_the_tool_takes_exactly_the_stances_of_the_closed_vocabulary() -> None:
    assert set(get_args(StanceName)) == {s.value for s in Stance}


def test_each_stance_asks_for_its_position_and_none_asks_for_an_answer_on_the_merits() -> None:
    prompts = {stance: member_prompt("Adopt X?", stance) for stance in (*Stance, None)}
    assert "strongest honest case FOR" in prompts[Stance.FOR]
    assert "AGAINST" in prompts[Stance.AGAINST] and "balanced" in prompts[Stance.NEUTRAL]
    assert "on its merits" in prompts[None]
    assert all("<question>\nAdopt X?\n</question>" in p and "Recommendation:" in p for p in prompts.values())


def test_labels_name_the_model_and_stance_and_tell_repeats_and_other_backends_apart() -> None:
    members = [Member("pro", CLI, Stance.FOR), Member("pro", CLI, Stance.FOR), Member(None, API)]
    assert [m.label for m in label_members(members, show_backend=False)] == [
        "pro (for)",
        "pro (for) #2",
        "default model",
    ]
    assert [m.label for m in label_members(members, show_backend=True)][2] == "api:default model"


def test_the_fold_keeps_each_answer_with_its_facts_and_sums_every_call() -> None:
    card = load_rate_card({})
    pro, flash = label_members([Member("pro", CLI), Member("flash", CLI)], show_backend=False)
    judge = Member("pro", CLI, None, "synthesis")
    outcomes = [
        Outcome(pro, 3.21, text="A", model="gemini-2.5-pro", usage=USAGE, job_id="j1"),
        Outcome(flash, 9.0, error="quota"),
    ]
    data = fold(outcomes, Outcome(judge, 1.0, text="S", usage=USAGE), card, "gemini-2.5-pro")
    first, second = data["answers"]
    assert first == {
        "label": "pro",
        "model": "gemini-2.5-pro",
        "backend": "gemini",
        "stance": None,
        "ok": True,
        "seconds": 3.2,
        "text": "A",
        "usage": {
            "input_tokens": 1000,
            "output_tokens": 200,
            "thinking_tokens": 50,
            "cached_tokens": 0,
            "total_tokens": 1250,
        },
        "estimated_usd": cost_of("gemini-2.5-pro", USAGE, card),
        "job_id": "j1",
    }
    assert second["ok"] is False and second["error"] == "quota" and second["model"] == "gemini-3.8-flash"
    assert data["failed"] == ["flash"]
    assert data["usage"]["input_tokens"] == 2000 and data["usage"]["thinking_tokens"] == 100
    assert data["synthesis"]["model"] == "gemini-3.1-pro-preview"  # the alias, as the card knows it
    assert data["unpriced_calls"] == 1  # the failed call has no usage to price


def test_thinking_is_priced_as_output() -> None:
    card = load_rate_card({})
    plain = cost_of("gemini-2.5-pro", Usage(input_tokens=1000, output_tokens=250), card)
    assert cost_of("gemini-2.5-pro", USAGE, card) == plain
    assert cost_of("no-such-model", USAGE, card) is None and cost_of(None, USAGE, card) is None


def test_a_dry_run_prices_each_prompt_and_says_how_it_counted() -> None:
    card = load_rate_card({})
    members = label_members([Member("pro", CLI, Stance.AGAINST), Member("unknown-model", CLI)], show_backend=False)
    counts = [estimated(member_prompt("Q?", m.stance)) for m in members]
    data = dry_run(members, counts, card, None)
    assert [a["input_tokens"] for a in data["answers"]] == [c.tokens for c in counts]
    assert data["answers"][0]["estimated_usd"] is not None and data["answers"][1]["estimated_usd"] is None
    assert "estimated at 4 characters a token" in data["token_method"]
