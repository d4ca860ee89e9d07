"""gemini-consensus's pure logic: one question put to several models (each with an optional stance), each answering
on its own (no model sees another's answer, and there is no round to converge), a fallback chain whose models stand
in for one that fails; the prompts, the labels that let the synthesis cite who said what, and the fold of every call
into one report (answers, who answered and who stood in, total usage and estimated cost). The synthesis itself:
consensus_synthesis.py.

Nothing here runs a model: tools/review/consensus_panel.py runs the calls and hands their outcomes to `fold`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any

from gemini_relay.backends.model_names import GEMINI_ALIASES
from gemini_relay.content.rate_card import RateCard, estimate_cost
from gemini_relay.content.rate_card import Usage as CostUsage
from gemini_relay.core.events import Usage
from gemini_relay.core.receipt import Receipt
from gemini_relay.core.tokens import TokenCount
from gemini_relay.core.vocabulary import BackendName

__all__ = [
    "DEFAULT_MODELS",
    "MAX_MODELS",
    "Member",
    "Outcome",
    "Stance",
    "cost_of",
    "dry_run",
    "fold",
    "label_members",
    "member_prompt",
    "panel_report",
    "parse_chain",
    "total_usage",
]

DEFAULT_MODELS = ("pro", "flash")  # the backend's two tiers: a strong and a fast opinion
MAX_MODELS = 8  # past this a "consensus" is a crowd: the synthesis prompt would mostly be other answers


class Stance(StrEnum):
    """The position a model is asked to argue (PAL's `consensus` stances); none: answer plainly."""

    FOR = "for"
    AGAINST = "against"
    NEUTRAL = "neutral"


_STANCE_BRIEF = {
    Stance.FOR: (
        "Argue the strongest honest case FOR the proposal or the option the question favours. Stay truthful: if "
        "something is a real blocker, say so plainly rather than argue around it."
    ),
    Stance.AGAINST: (
        "Examine the proposal critically and argue AGAINST it: risks, costs, hidden assumptions, better "
        "alternatives. Stay truthful: acknowledge genuine strengths instead of inventing flaws."
    ),
    Stance.NEUTRAL: (
        "Give a balanced assessment: weigh the strongest arguments on each side with equal care before concluding."
    ),
}
_ANSWER_SHAPE = (
    "Be concrete and brief (at most ~400 words). End with one line starting 'Recommendation:' that states your "
    "position."
)
_REVIEW_SHAPE = (
    "Review it on your own: list each finding on its own line with its severity (high, medium, low), concrete and "
    "brief (at most ~400 words). End with one line 'Verdict: ship', 'Verdict: fix first' or 'Verdict: redesign'."
)


@dataclass(frozen=True)
class Member:
    """One model of the panel: what it is asked to be, and the label the synthesis cites it by."""

    model: str | None  # None: the backend's default model
    backend: BackendName  # the backend that runs it
    stance: Stance | None = None
    label: str = ""
    stands_in_for: str | None = None  # set: a fallback model, answering in place of the member of this label


@dataclass(frozen=True)
class Outcome:
    """What one call gave: an answer or the reason it has none, with its time, usage and the model that ran it."""

    member: Member
    seconds: float
    text: str = ""
    error: str | None = None  # set: this model failed or timed out (its text, if any, is partial and unused)
    model: str | None = None  # the model the upstream reports it ran
    usage: Usage | None = None
    job_id: str | None = None
    receipt: Receipt | None = None  # the run's, when it answered
    value: Any = None  # the backend's parsed JSON answer (a synthesis asked for JSON), when it gave one
    has_value: bool = False

    @property
    def ok(self) -> bool:
        return self.error is None


def label_members(members: Sequence[Member], *, show_backend: bool) -> list[Member]:
    """Each member with a distinct, readable label: `pro (for)`, `api:flash`, `flash #2` for a repeat."""
    seen: dict[str, int] = {}
    labelled: list[Member] = []
    for member in members:
        base = member.model or "default model"
        base = f"{member.backend}:{base}" if show_backend else base
        base += f" ({member.stance.value})" if member.stance else ""
        seen[base] = seen.get(base, 0) + 1
        label = base if seen[base] == 1 else f"{base} #{seen[base]}"
        labelled.append(replace(member, label=label))
    return labelled


def parse_chain(raw: str, backends: Sequence[str]) -> list[tuple[str | None, str]]:
    """A fallback chain's `[backend:]model` entries, comma-separated, as (backend or None: the active one, model);
    a prefix that names none of `backends` is part of the model id."""
    chain: list[tuple[str | None, str]] = []
    for entry in (e.strip() for e in raw.split(",")):
        head, sep, tail = entry.partition(":")
        if sep and head in backends and tail:
            chain.append((head, tail))
        elif entry:
            chain.append((None, entry))
    return chain


def member_prompt(question: str, stance: Stance | None, *, review: bool = False) -> str:
    brief = _STANCE_BRIEF[stance] if stance is not None else "Answer the question on its merits."
    shape = _REVIEW_SHAPE if review else _ANSWER_SHAPE
    return (
        "You are one of several models consulted independently on the question below: you do not see the others' "
        f"answers, and they do not see yours.\n\n{brief}\n{shape}\n\n<question>\n{question}\n</question>"
    )


def priced_model(model: str | None, default: str | None) -> str | None:
    """The model id the rate card knows a call by: an alias ('pro') as the Gemini id it stands for."""
    chosen = model or default
    return GEMINI_ALIASES.get(chosen, chosen) if chosen else None


def cost_of(model: str | None, usage: Usage | None, card: RateCard) -> float | None:
    """Estimated USD of one call by the dated card (thinking is billed as output); None when it cannot be priced."""
    if model is None or usage is None:
        return None
    billed = CostUsage(input_tokens=usage.input_tokens, output_tokens=usage.output_tokens + usage.thinking_tokens)
    estimate = estimate_cost(model, billed, card)
    return estimate.usd if estimate is not None else None


def total_usage(usages: Sequence[Usage | None]) -> Usage:
    present = [u for u in usages if u is not None]
    return Usage(
        input_tokens=sum(u.input_tokens for u in present),
        output_tokens=sum(u.output_tokens for u in present),
        thinking_tokens=sum(u.thinking_tokens for u in present),
        cached_tokens=sum(u.cached_tokens for u in present),
        total_tokens=sum(u.total_tokens for u in present),
    )


def _usage_json(usage: Usage | None) -> dict[str, int] | None:
    if usage is None:
        return None
    return {
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "thinking_tokens": usage.thinking_tokens,
        "cached_tokens": usage.cached_tokens,
        "total_tokens": usage.total_tokens,
    }


def _outcome_json(outcome: Outcome, card: RateCard, default_model: str | None) -> dict[str, Any]:
    member = outcome.member
    row: dict[str, Any] = {
        "label": member.label,
        "model": outcome.model or priced_model(member.model, default_model) or "default",
        "backend": member.backend,
        "stance": member.stance.value if member.stance else None,
        "ok": outcome.ok,
        "seconds": round(outcome.seconds, 1),
    }
    if outcome.ok:
        row["text"] = outcome.text
    else:
        row["error"] = outcome.error
    if outcome.usage is not None:
        row["usage"] = _usage_json(outcome.usage)
    row["estimated_usd"] = cost_of(row["model"], outcome.usage, card)
    if outcome.job_id:
        row["job_id"] = outcome.job_id
    if member.stands_in_for:
        row["stands_in_for"] = member.stands_in_for
    return row


def panel_report(outcomes: Sequence[Outcome]) -> dict[str, Any]:
    """Who answered; for each member that failed, the fallback model that answered in its place, or its name under
    `missing` when none did."""
    stood_in = {o.member.stands_in_for: o.member.label for o in outcomes if o.ok and o.member.stands_in_for}
    members = [o.member.label for o in outcomes if not o.member.stands_in_for]
    failed = {o.member.label for o in outcomes if not o.ok}
    return {
        "answered": [o.member.label for o in outcomes if o.ok],
        "replaced": [{"missing": label, "stood_in": stood_in[label]} for label in members if label in stood_in],
        "missing": [label for label in members if label in failed and label not in stood_in],
    }


def fold(outcomes: Sequence[Outcome], synthesis: Outcome, card: RateCard, default_model: str | None) -> dict[str, Any]:
    """The report: every answer with its model, time, usage and cost; the synthesis; the total of all calls."""
    answers = [_outcome_json(o, card, default_model) for o in outcomes]
    judged = _outcome_json(synthesis, card, default_model)
    calls = [*outcomes, synthesis]
    costs = [row["estimated_usd"] for row in [*answers, judged]]
    priced = [c for c in costs if c is not None]
    return {
        "answers": answers,
        "synthesis": judged,
        "failed": [o.member.label for o in outcomes if not o.ok],
        "panel": panel_report(outcomes),
        "usage": _usage_json(total_usage([c.usage for c in calls])),
        "estimated_usd": round(sum(priced), 6) if priced else None,
        "unpriced_calls": len(costs) - len(priced),
        "rate_card": {"as_of": card.as_of, "source": card.source},
    }


def dry_run(
    members: Sequence[Member], counts: Sequence[TokenCount], card: RateCard, default_model: str | None
) -> dict[str, Any]:
    """What each model's prompt (`counts[i]`, member i's) would cost in input tokens, before anything is sent."""
    answers: list[dict[str, Any]] = []
    for member, count in zip(members, counts, strict=True):
        model = priced_model(member.model, default_model) or "default"
        estimate = estimate_cost(model, CostUsage(input_tokens=count.tokens), card)
        answers.append(
            {
                "label": member.label,
                "model": model,
                "backend": member.backend,
                "stance": member.stance.value if member.stance else None,
                "input_tokens": count.tokens,
                "token_method": count.method.value,
                "estimated_usd": estimate.usd if estimate is not None else None,
            }
        )
    priced = [a["estimated_usd"] for a in answers if a["estimated_usd"] is not None]
    methods = list(dict.fromkeys(c.method for c in counts))
    return {
        "dry_run": True,
        "answers": answers,
        "input_tokens": sum(c.tokens for c in counts),
        "token_method": "; ".join(m.label for m in methods),
        "estimated_usd": round(sum(priced), 6) if priced else None,
        "rate_card": {"as_of": card.as_of, "source": card.source},
        "note": "Input tokens of each model's prompt only: output, thinking and the synthesis call (whose prompt "
        "holds the answers) are not known before the models answer.",
    }
