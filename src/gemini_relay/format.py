"""The relay's response conventions: ⚠️ notices, `Gemini response:`, 🧵 conversationId, 📊 usage, failure text."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from gemini_relay.core.events import Usage
from gemini_relay.errors import RunFailed

RESPONSE_PREFIX = "Gemini response:"
THREAD_MARKER = "🧵 conversationId:"
NOTICE_MARKER = "⚠️"


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
