"""The jobs tools' replies: short Markdown a person reads at a glance (state, elapsed, the answer, the next step; a
table for lists), with the job's fields as structuredContent. The model's view (common/model_view.py) is the same text
with a finished job's answer left to `result`, which holds it whole."""

from __future__ import annotations

import json
from typing import Any

from gemini_relay.core.receipt import Receipt
from gemini_relay.format import thread_line, with_notices
from gemini_relay.tools.common.context import Reply

PREVIEW_CELL = 60  # characters of a job's answer in a gemini-jobs row (the row's `preview` holds 200)
_IN_RESULT = "(The answer is in `result`.)"
_PARTIAL = "[Partial response — the run did not finish]"


def collect_hint(job_id: str) -> str:
    return f'Collect it with gemini-wait {{"jobId": "{job_id}"}} (blocks, with progress) or gemini-status.'


def status_reply(data: dict[str, Any]) -> Reply:
    """gemini-status / gemini-wait: `data` is the job's fields (JobStatus.to_json, plus `note` / `next`)."""
    head = f"**Job `{data['job_id']}`** · {data['state']} · {data['elapsed']} · {data['tool']} on {data['backend']}"
    if data.get("model"):
        head += f" · {data['model']}"
    answer = _answer(data)
    summary = "\n".join([head, *_failure(data)])
    tail = "\n".join(_tail(data))
    text = _joined(data, [summary, answer, tail])
    pointer = _IN_RESULT if data["state"] == "done" else f"{_PARTIAL}\n{_IN_RESULT}"
    model_text = _joined(data, [summary, pointer, tail]) if data.get("result") else None
    receipts = (Receipt.from_json(data["receipt"]),) if data.get("receipt") else ()
    return Reply(text, structured=data, model_text=model_text, receipts=receipts)


def started_reply(data: dict[str, Any]) -> Reply:
    """gemini-run: the new job, its conversation when already named, and how to collect it."""
    ended = data["state"] in ("done", "failed", "cancelled")
    state = f"; it has ended already ({data['state']})." if ended else f" ({data['state']})."
    head = f"Started job `{data['job_id']}`{state}"
    thread = [thread_line(data["conversation_id"])] if data.get("conversation_id") else []
    return Reply(_joined(data, [head, *thread, f"Next: {data['next']}"]), structured=data)


def list_reply(data: dict[str, Any], state: str | None) -> Reply:
    """gemini-jobs: a table, newest first; the model reads the rows as `jobs`."""
    jobs: list[dict[str, Any]] = data["jobs"]
    if not jobs:
        return Reply("No jobs" + (f" in state {state}." if state else "."), structured=data)
    rows = ["| job | state | elapsed | tool | backend | created | answer |", "|---|---|---|---|---|---|---|"]
    rows += [
        f"| `{j['job_id']}` | {j['state']} | {j.get('elapsed', '')} | {j['tool']} | {j['backend']} | "
        f"{j['created']} | {_cell(j.get('preview', ''))} |"
        for j in jobs
    ]
    count = f"{data['count']} job{'s' if data['count'] != 1 else ''}, newest first."
    hint = 'Collect one with gemini-status {"jobId": "<job>"}.'
    table = "\n".join([*rows, "", f"{count} {hint}"])
    return Reply(table, structured=data, model_text=f"{count} {hint} (The rows are in `jobs`.)")


def _answer(data: dict[str, Any]) -> str:
    """The answer, labelled when it is partial; a JSON answer without text as a code block."""
    result = data.get("result") or ""
    if not result and "structured_output" in data:
        return "```json\n" + json.dumps(data["structured_output"], ensure_ascii=False, indent=2) + "\n```"
    if result and data["state"] != "done":
        return f"{_PARTIAL}\n{result}"
    return result


def _failure(data: dict[str, Any]) -> list[str]:
    lines = []
    if data.get("error"):
        reason = f" ({data['failure_reason']})" if data.get("failure_reason") else ""
        lines.append(f"Error{reason}: {data['error']}")
    if data.get("recovery"):
        lines.append(f"Recovery: {data['recovery']}")
    if "retryable" in data:
        error_id = f" · error id {data['error_id']}" if data.get("error_id") else ""
        lines.append(f"Retryable: {'yes' if data['retryable'] else 'no'}{error_id}")
    return lines


def _tail(data: dict[str, Any]) -> list[str]:
    lines = [f"Saved to: {path}" for path in data.get("files", [])]
    if data.get("conversation_id"):
        lines.append(thread_line(data["conversation_id"]))
    usage = data.get("usage")
    if usage:
        turns = data.get("turns")
        lines.append(
            f"📊 [Tokens: {usage.get('input_tokens', 0)} in, {usage.get('output_tokens', 0)} out "
            f"({usage.get('thinking_tokens', 0)} thinking)]" + (f" · {turns} turn{'s' * (turns != 1)}" if turns else "")
        )
    step = data.get("note") or data.get("next")
    if step:
        lines.append(f"Next: {step}")
    return lines


def _joined(data: dict[str, Any], parts: list[str]) -> str:
    return with_notices(data.get("notices", []), "\n\n".join(p for p in parts if p))


def _cell(text: str) -> str:
    flat = " ".join(text.split()).replace("|", "\\|")
    return (flat if len(flat) <= PREVIEW_CELL else flat[: PREVIEW_CELL - 1] + "…") or "—"
