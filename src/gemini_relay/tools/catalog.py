"""gemini-models and gemini-conversations: what the active backend accepts, and its saved conversations."""

from __future__ import annotations

from gemini_relay.backends.capabilities import Conversation
from gemini_relay.format import with_notices
from gemini_relay.tools.context import Deps, Reply
from gemini_relay.tools.progress import CallProgress
from gemini_relay.tools.schemas import ConversationsInput, EmptyInput


async def models(deps: Deps, args: EmptyInput, call: CallProgress) -> Reply:
    listing = await deps.registry.models().model_listing()
    data = {"backend": deps.selection().backend, "lines": listing.lines, "notices": listing.notices}
    return Reply(with_notices(listing.notices, "\n".join(listing.lines)), structured=data)


async def conversations(deps: Deps, args: ConversationsInput, call: CallProgress) -> Reply:
    rows = await deps.registry.conversations().conversation_rows(args.limit)
    data = {
        "source": rows.source,
        "conversations": [
            {"conversationId": c.id, "lastActive": c.last_active, "cwd": c.cwd, "firstPrompt": c.first_prompt}
            for c in rows.conversations
        ],
        "notices": rows.notices,
    }
    if not rows.conversations:
        return Reply(with_notices(rows.notices, f"No saved {rows.source} conversations were found."), structured=data)
    return Reply(with_notices(rows.notices, _table(rows.conversations)), structured=data)


def _table(found: list[Conversation]) -> str:
    rows = ["| conversationId | last active | cwd | first prompt |", "|---|---|---|---|"]
    rows += [f"| {c.id} | {c.last_active} | {_cell(c.cwd)} | {_cell(c.first_prompt)} |" for c in found]
    rows += ["", "Pass a conversationId to gemini-ask to continue that conversation."]
    return "\n".join(rows)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ") or "—"
