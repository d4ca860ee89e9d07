"""gemini-consensus's text for people, short: who answered (and who stood in), the verdict, the findings agreed by
all, those raised by some (named), the disagreements, the recommendation, one line of facts per call. The answers
themselves are in structuredContent; only an untagged result (the synthesis unusable) shows them here, whole."""

from __future__ import annotations

from typing import Any

from gemini_relay.core.vocabulary import Agreement, Verdict


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
    panel: dict[str, Any] = data["panel"]
    head = (
        f"**Consensus of {len(panel['answered'])} model(s)** · {_tokens(data['usage'])} over "
        f"{len(answers) + 1} calls · {_usd(data['estimated_usd'])} (rate card of {data['rate_card']['as_of']})"
    )
    parts = [head, *_panel_lines(data)]
    if data["tagged"]:
        parts += _tagged(data)
        parts.append("Calls: " + " · ".join(_call_line(call) for call in [*answers, data["synthesis"]]))
        return "\n\n".join(parts)
    parts.append(
        f"⚠️ No tagged synthesis ({data['untagged_because']}): each model's answer follows as it gave it; nothing "
        "is tagged or merged."
    )
    for answer in answers:
        if answer["ok"]:
            parts.append(f"### {answer['label']} ({_facts(answer)})\n\n{answer['text'].strip()}")
    return "\n\n".join(parts)


def _panel_lines(data: dict[str, Any]) -> list[str]:
    panel = data["panel"]
    errors = {a["label"]: a.get("error") for a in data["answers"] if not a["ok"]}
    lines = [f"⚠️ {r['missing']} failed ({errors[r['missing']]}); {r['stood_in']} stood in." for r in panel["replaced"]]
    lines += [f"⚠️ No answer from {label} ({errors[label]}); nobody stood in." for label in panel["missing"]]
    failed_judges = data.get("synthesis_replaced") or []
    if failed_judges:
        judge = data["synthesis"]
        after = f"{judge['model']} synthesised instead" if judge["ok"] else "no other synthesis succeeded"
        tried = "; ".join(f"{j['model']}: {j['error']}" for j in failed_judges)
        lines.append(f"⚠️ The synthesis failed ({tried}); {after}.")
    return lines


def _tagged(data: dict[str, Any]) -> list[str]:
    parts = []
    if data["verdict"]:
        parts.append(f"**Verdict: {Verdict(data['verdict']).label}**")
    findings: list[dict[str, Any]] = data["findings"]
    by_all = [f"- {_severity(f)}{f['text']}" for f in findings if f["agreement"] == Agreement.ALL]
    by_some = [
        f"- {_severity(f)}{f['text']} — {', '.join(f['found_by'])}"
        for f in findings
        if f["agreement"] == Agreement.SOME
    ]
    if by_all:
        parts.append("## Found by all\n\n" + "\n".join(by_all))
    if by_some:
        parts.append("## Found by some\n\n" + "\n".join(by_some))
    if data["disagreements"]:
        rows = [
            f"- **{d['topic']}**: " + "; ".join(f"{', '.join(p['held_by'])}: {p['position']}" for p in d["positions"])
            for d in data["disagreements"]
        ]
        parts.append("## Disagreements\n\n" + "\n".join(rows))
    if not findings and not data["disagreements"]:
        parts.append("The synthesis lists no findings.")
    if data["recommendation"]:
        parts.append(f"**Recommendation:** {data['recommendation']}")
    return parts


def _severity(finding: dict[str, Any]) -> str:
    return f"({finding['severity']}) " if finding.get("severity") else ""


def _call_line(call: dict[str, Any]) -> str:
    return f"{call['label']} ({_facts(call)})" if call["ok"] else f"{call['label']} ❌"


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
