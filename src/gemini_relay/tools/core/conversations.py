"""gemini-conversations: the active backend's saved conversations, to continue with gemini-ask's conversationId."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

from pydantic import Field

from gemini_relay.backends.capabilities import Conversation
from gemini_relay.core.vocabulary import Effect
from gemini_relay.errors import InputError
from gemini_relay.format import with_notices
from gemini_relay.tools.common import output_schemas as out
from gemini_relay.tools.common.context import Deps, Reply
from gemini_relay.tools.common.definition import Doc, ToolDef
from gemini_relay.tools.common.inputs import ToolInput
from gemini_relay.tools.common.progress import CallProgress


class ConversationsInput(ToolInput):
    limit: int = Field(20, ge=1, le=100)
    dir: str | None = Field(
        None, min_length=1, max_length=4096, description="Only conversations that ran in this directory."
    )


SCAN_LIMIT = 1000  # with `dir`, the newest this many are read, then filtered (a directory's rows may be older)


async def conversations(deps: Deps, args: ConversationsInput, call: CallProgress) -> Reply:
    lister = deps.registry.conversations()
    if args.dir is None:
        rows = await lister.conversation_rows(args.limit)
    else:
        wanted = _canonical(deps.settings.project_root, args.dir)
        if wanted is None:
            raise InputError(
                "not a path this machine can name (an unknown ~user, or a character no path holds)", field="dir"
            )
        rows = await lister.conversation_rows(SCAN_LIMIT)
        kept = [c for c in rows.conversations if c.cwd and _canonical(deps.settings.project_root, c.cwd) == wanted]
        rows = replace(rows, conversations=kept[: args.limit])
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


def _canonical(root: Path, raw: str) -> str | None:
    """Seed 001's dir filter: made absolute, with best-effort symlink resolution (a gone directory still matches);
    None for what no path can be (`~someone` unknown here, a lone surrogate), which `dir` refuses and a row skips."""
    try:
        return os.path.realpath(root / Path(raw).expanduser())
    except (RuntimeError, ValueError):  # expanduser's unknown user; UnicodeEncodeError is a ValueError
        return None


def _table(found: list[Conversation]) -> str:
    rows = ["| conversationId | last active | cwd | first prompt |", "|---|---|---|---|"]
    rows += [f"| {c.id} | {c.last_active} | {_cell(c.cwd)} | {_cell(c.first_prompt)} |" for c in found]
    rows += ["", "Pass a conversationId to gemini-ask to continue that conversation."]
    return "\n".join(rows)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ") or "—"


DOC = Doc(
    "Recent saved conversations; pass an id to gemini-ask as conversationId to continue one.",
    prompt="List recent Gemini conversations.",
)
TOOL = ToolDef(
    "gemini-conversations", ConversationsInput, conversations, Effect.LOCAL, DOC, output_schema=out.CONVERSATIONS
)
