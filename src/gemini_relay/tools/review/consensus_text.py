"""gemini-consensus's text for people: the synthesis first, then each model's answer with its facts."""

from __future__ import annotations

from typing import Any


def _usd(amount: float | None) -> str:
    return "not priced" if amount is None else "≈ $" + (f"{amount:.6f}".rstrip("0").rstrip(".") or "0")


def _tokens(usage: dict[str, int] | None) -> str:
    if not usage:
        return "no usage reported"
    thinking = f" + {usage['thinking_tokens']} thinking" if usage.get("thinking_tokens") else ""
    return f"{usage['input_tokens']} in / {usage['output_tokens']} out{thinking} tokens"


def _facts(call: dict[str, Any]) -> str:
    return f"{call['model']} · {call['seconds']} s · {_tokens(call.get('usage'))} · {_usd(call['estimated_usd'])}"


def markdown(data: dict[str, Any]) -> str:
    if data.get("dry_run"):
        return _dry_run(data)
    answers: list[dict[str, Any]] = data["answers"]
    synthesis: dict[str, Any] = data["synthesis"]
    ok = [a for a in answers if a["ok"]]
    head = (
        f"**Consensus of {len(ok)} of {len(answers)} model(s)** · {_tokens(data['usage'])} over "
        f"{len(answers) + 1} calls · {_usd(data['estimated_usd'])} (rate card of {data['rate_card']['as_of']})"
    )
    parts = [head]
    if data["failed"]:
        parts.append(f"⚠️ No answer from {', '.join(data['failed'])}; the synthesis weighs the others only.")
    if synthesis["ok"]:
        parts.append(f"## Synthesis ({_facts(synthesis)})\n\n{synthesis['text'].strip()}")
    else:
        parts.append(f"## Synthesis failed\n\n{synthesis['error']} The answers below stand on their own.")
    for answer in answers:
        if answer["ok"]:
            parts.append(f"### {answer['label']} ({_facts(answer)})\n\n{answer['text'].strip()}")
        else:
            parts.append(f"### {answer['label']}: no answer ({answer['seconds']} s)\n\n❌ {answer['error']}")
    return "\n\n".join(parts)


def _dry_run(data: dict[str, Any]) -> str:
    rows = ["| model | stance | input tokens | ≈ USD |", "|---|---|---|---|"]
    rows += [
        f"| {a['label']} | {a['stance'] or '—'} | {a['input_tokens']} | {_usd(a['estimated_usd'])} |"
        for a in data["answers"]
    ]
    head = (
        f"**Dry run, no model called**: {data['input_tokens']} input tokens over {len(data['answers'])} model(s) "
        f"({data['token_method']}), {_usd(data['estimated_usd'])} (rate card of {data['rate_card']['as_of']})"
    )
    return "\n\n".join([head, "\n".join(rows), data["note"]])


def started_text(data: dict[str, Any]) -> str:
    jobs = ", ".join(f"{a['label']} `{a['job_id']}`" for a in data["answers"])
    return f"Started as jobs: {jobs}.\n\nNext: {data['next']}"
