"""The relay's response conventions: ⚠️ notices, `Gemini response:`, 🧵 conversationId, 📊 usage, failure text."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from gemini_relay.core.events import Usage
from gemini_relay.core.receipt import Receipt
from gemini_relay.errors import RunFailed

RESPONSE_PREFIX = "Gemini response:"
THREAD_MARKER = "🧵 conversationId:"
NOTICE_MARKER = "⚠️"
RECEIPT_MARKER = "—"  # the receipt line ends the reply: "— <model> via <backend> (warm) · 1.2 s · 812 tokens · job …"


def with_notices(notices: Iterable[str], body: str) -> str:
    """Prepend one `⚠️ <notice>` line per notice, so a dropped option is never silent."""
    lines = [f"{NOTICE_MARKER} {n}" for n in dict.fromkeys(notices)]
    return "\n".join(lines) + "\n\n" + body if lines else body


def thread_line(conversation_id: str) -> str:
    return f"{THREAD_MARKER} {conversation_id} (pass it back to continue this thread)"


def usage_line(usage: Usage) -> str:
    return f"📊 [Tokens: {usage.input_tokens} in, {usage.output_tokens} out ({usage.thinking_tokens} thinking)]"


def gemini_reply(
    text: str,
    *,
    notices: Iterable[str] = (),
    conversation_id: str | None = None,
    usage: Usage | None = None,
    prefixed: bool = True,
) -> str:
    """A successful answer with the relay's markers. Pass conversation_id/usage only where they belong."""
    body = f"{RESPONSE_PREFIX}\n{text}" if prefixed else text
    if conversation_id:
        body += f"\n\n{thread_line(conversation_id)}"
    if usage is not None:
        body += f"\n\n{usage_line(usage)}"
    return with_notices(notices, body)


def receipt_line(receipts: Sequence[Receipt]) -> str:
    """The one line that says which run(s) the answer came from (core/receipt.py has the fields)."""
    if len(receipts) == 1:
        r = receipts[0]
        model = r.model or "the default model"
        asked = f" (asked {r.requested_model})" if r.requested_model else ""
        how = "" if r.warm is None else (" (warm)" if r.warm else " (cold)")
        parts = [f"{RECEIPT_MARKER} {model}{asked} via {r.backend}{how}", f"{r.total_seconds:.1f} s"]
        if r.token_count is not None:
            parts.append(f"{r.token_count} tokens")
        if r.partial:
            parts.append("partial")
        parts.append(f"job {r.job_id}" if r.job_id else f"run {r.run_id}")
        return " · ".join(parts)
    models = ", ".join(dict.fromkeys(r.model or "the default model" for r in receipts))
    backends = ", ".join(dict.fromkeys(r.backend for r in receipts))
    tokens = [r.token_count for r in receipts if r.token_count is not None]
    parts = [f"{RECEIPT_MARKER} {len(receipts)} runs: {models} via {backends}"]
    if tokens:
        parts.append(f"{sum(tokens)} tokens")
    if any(r.partial for r in receipts):
        parts.append("partial")
    parts.append("jobs " + ", ".join(r.job_id or r.run_id for r in receipts))
    return " · ".join(parts)


def with_receipt(text: str, receipts: Sequence[Receipt]) -> str:
    """`text` with its receipt line last (unchanged without receipts)."""
    return f"{text}\n\n{receipt_line(receipts)}" if receipts else text


def failure_message(exc: RunFailed) -> str:
    """The error text of a failed run: the reason, the recovery hint, then any partial answer, labelled."""
    parts = [exc.message]
    if exc.recovery:
        parts.append(exc.recovery)
    if exc.partial_text.strip():
        parts.append(f"[Partial response — the run did not finish]\n{exc.partial_text}")
    return "\n\n".join(parts)


def misconfigured(problems: Sequence[str]) -> str:
    """Why a server that started with configuration errors runs nothing, and what to do about it."""
    lines = ["gemini-relay is misconfigured, so it runs nothing until this is fixed:"]
    lines += [f"- {problem}" for problem in problems]
    lines.append(
        "Fix the server's environment (the `env` of its entry in the MCP client's config), then restart the server "
        "(reconnect it). gemini-doctor shows the whole check."
    )
    return "\n".join(lines)
