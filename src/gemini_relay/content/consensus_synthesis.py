"""gemini-consensus's synthesis: the judge is asked for JSON (a schema whose only citable names are the labels of the
models that answered), and its answer is read back as findings tagged by who raised them, the disagreements with who
holds each position, and, for a review, a verdict. Who agrees is counted here from the tags, never taken from the
judge's word; an answer that does not validate is not repaired or guessed at: the caller reports the answers untagged.

Pure: no model is called here (tools/review/consensus_panel.py runs the synthesis call).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from gemini_relay.content.json_schema import NoJsonFound, extract_json, make_validator, validation_errors
from gemini_relay.core.vocabulary import Agreement, Severity, Verdict

__all__ = ["MAX_PROBLEMS", "Tagged", "read_synthesis", "synthesis_fields", "synthesis_prompt", "synthesis_schema"]

MAX_PROBLEMS = 5  # the reason an untagged result gives: enough to see what was wrong, not the whole list

_VERDICTS = (
    "End with a verdict: 'ship' (nothing blocks it), 'fix_first' (blocking problems that can be fixed within the "
    "present design) or 'redesign' (the approach itself is wrong)."
)


def synthesis_schema(labels: Sequence[str], *, review: bool) -> dict[str, Any]:
    """The JSON the judge answers: `labels` (the models that answered) are the only names `found_by` and `held_by`
    accept; a review's findings carry a severity and the answer a verdict."""
    who = {"type": "array", "items": {"type": "string", "enum": list(labels)}, "minItems": 1}
    finding: dict[str, Any] = {
        "type": "object",
        "properties": {"text": {"type": "string", "minLength": 1}, "found_by": who},
        "required": ["text", "found_by"],
    }
    if review:
        finding["properties"]["severity"] = {"type": "string", "enum": [s.value for s in Severity]}
        finding["required"].append("severity")
    position = {
        "type": "object",
        "properties": {"position": {"type": "string", "minLength": 1}, "held_by": who},
        "required": ["position", "held_by"],
    }
    disagreement = {
        "type": "object",
        "properties": {
            "topic": {"type": "string", "minLength": 1},
            "positions": {"type": "array", "items": position, "minItems": 2},
        },
        "required": ["topic", "positions"],
    }
    properties: dict[str, Any] = {
        "findings": {"type": "array", "items": finding},
        "disagreements": {"type": "array", "items": disagreement},
        "recommendation": {"type": "string"},
    }
    if review:
        properties["verdict"] = {"type": "string", "enum": [v.value for v in Verdict]}
    return {"type": "object", "properties": properties, "required": list(properties)}


def synthesis_prompt(
    question: str, answers: Sequence[tuple[str, str, str]], failed: Sequence[str], *, review: bool
) -> str:
    """The judge's prompt: every answer (label, stance, text) under its label; the failed models named, not counted."""
    blocks = [
        f'<answer model="{label}" stance="{stance}">\n{text.strip()}\n</answer>' for label, stance, text in answers
    ]
    missing = (
        f"\n\nThese models gave no answer (failed or timed out) and must not be cited: {', '.join(failed)}."
        if failed
        else ""
    )
    labels = ", ".join(json.dumps(label) for label, _, _ in answers)
    task = "review" if review else "question"
    return (
        f"{len(answers)} model(s) answered the {task} below independently, without seeing each other's answers; "
        "some may have been asked to argue a stance (for, against, neutral), so weigh arguments, not how many "
        f"models hold a view.\n\n<question>\n{question}\n</question>\n\n" + "\n\n".join(blocks) + missing + "\n\n"
        "Do not reconcile them and do not add points of your own. List every distinct point the answers raise as a "
        "finding, with `found_by`: the labels of exactly the models whose answer raises it. Where answers "
        "contradict each other, list the disagreement under `disagreements`: each position with `held_by`, the "
        f"labels of the models that hold it. Labels, exactly as given: {labels}. "
        + ("Give each finding a severity (high, medium, low). " + _VERDICTS if review else "")
        + " Finish with a short recommendation."
    )


@dataclass(frozen=True)
class Tagged:
    """The synthesis as data: findings tagged by who raised them, disagreements, the recommendation, the verdict."""

    findings: list[dict[str, Any]]
    disagreements: list[dict[str, Any]]
    recommendation: str
    verdict: Verdict | None


def read_synthesis(
    value: Any, text: str, labels: Sequence[str], *, review: bool, has_value: bool = False
) -> Tagged | list[str]:
    """The judge's answer (`value` when the backend parsed it, else the JSON in `text`) as Tagged, or the problems
    that make it unusable (then nothing of it is tagged)."""
    if not has_value:
        try:
            value = extract_json(text).value
        except NoJsonFound:
            return ["the synthesis answer is not JSON"]
    problems = validation_errors(make_validator(synthesis_schema(labels, review=review)), value)
    if problems:
        return problems[:MAX_PROBLEMS]
    order = {label: n for n, label in enumerate(labels)}

    def who(names: list[str]) -> list[str]:
        return sorted(set(names), key=order.__getitem__)  # panel order, each once

    findings = []
    for raw in value["findings"]:
        found_by = who(raw["found_by"])
        finding: dict[str, Any] = {
            "text": raw["text"].strip(),
            "found_by": found_by,
            "agreement": (Agreement.ALL if len(found_by) == len(labels) else Agreement.SOME).value,
        }
        if review:
            finding["severity"] = raw["severity"]
        findings.append(finding)
    disagreements = [
        {
            "topic": raw["topic"].strip(),
            "positions": [{"position": p["position"].strip(), "held_by": who(p["held_by"])} for p in raw["positions"]],
        }
        for raw in value["disagreements"]
    ]
    verdict = Verdict(value["verdict"]) if review else None
    return Tagged(findings, disagreements, value["recommendation"].strip(), verdict)


def synthesis_fields(read: Tagged | list[str]) -> dict[str, Any]:
    """The report's synthesis part: the tagged findings, or (`read` the problems) none, and why."""
    if isinstance(read, Tagged):
        return {
            "tagged": True,
            "findings": read.findings,
            "disagreements": read.disagreements,
            "recommendation": read.recommendation,
            "verdict": read.verdict.value if read.verdict else None,
        }
    return {
        "tagged": False,
        "findings": [],
        "disagreements": [],
        "recommendation": None,
        "verdict": None,
        "untagged_because": "; ".join(read),
    }
