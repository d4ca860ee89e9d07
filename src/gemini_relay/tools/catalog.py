"""gemini-models and gemini-conversations: what the active backend accepts, and its saved conversations."""

from __future__ import annotations

from gemini_relay.backends.agy_args import MODEL_ALIASES as AGY_ALIASES
from gemini_relay.backends.agy_models import FALLBACK_MODELS, FALLBACK_NOTICE, Catalog
from gemini_relay.backends.gemini_cli import gemini_home
from gemini_relay.backends.gemini_cli_args import KNOWN_MODELS, MODEL_ALIASES
from gemini_relay.backends.gemini_sessions import Conversation, list_conversations
from gemini_relay.core.vocabulary import BackendName
from gemini_relay.errors import BackendUnavailable
from gemini_relay.format import with_notices
from gemini_relay.tools.context import Deps, Reply
from gemini_relay.tools.progress import CallProgress
from gemini_relay.tools.schemas import ConversationsInput, EmptyInput


async def models(deps: Deps, args: EmptyInput, call: CallProgress) -> Reply:
    if deps.selection().backend is BackendName.AGY:
        return await _agy_models(deps)
    default = deps.settings.default_model or "auto (the Gemini CLI routes each prompt)"
    lines = [
        "Models for the gemini backend (Gemini CLI):",
        "",
        *(f"- {model}" for model in KNOWN_MODELS),
        "- auto (let the CLI's router choose per prompt)",
        "",
        "Aliases: " + ", ".join(f"{alias} → {target}" for alias, target in MODEL_ALIASES.items()),
        f"Default: {default}",
        "",
        "Any other model id your API key can use is passed through with -m.",
    ]
    return Reply("\n".join(lines))


async def _agy_models(deps: Deps) -> Reply:
    try:
        catalog = await deps.agy.models()
    except BackendUnavailable as exc:
        catalog = Catalog(FALLBACK_MODELS, live=False, notice=FALLBACK_NOTICE.format(why=exc))
    default = deps.settings.agy_default_model or "agy's own default"
    lines = [
        "Models for the agy backend (Antigravity CLI) — pass the id as `model`:",
        "",
        *(f"- {m.id} — {m.label}" for m in catalog.models),
        "",
        "Aliases: " + ", ".join(f"{alias} → {target}" for alias, target in AGY_ALIASES.items()),
        f"Default: {default}",
        "",
        "Non-Gemini models draw on a separate quota group (see gemini-doctor).",
    ]
    notices = [catalog.notice] if catalog.notice and not catalog.live else []
    return Reply(with_notices(notices, "\n".join(lines)))


async def conversations(deps: Deps, args: ConversationsInput, call: CallProgress) -> Reply:
    notices: list[str] = []
    if deps.selection().backend is BackendName.AGY:
        listing = await deps.agy.conversations(args.limit)
        found, notices = listing.conversations, list(listing.notices)
        source = "agy"
    else:
        found = list_conversations(gemini_home(deps.gemini.env()), args.limit)
        source = "Gemini CLI"
    if not found:
        return Reply(with_notices(notices, f"No saved {source} conversations were found."))
    return Reply(with_notices(notices, _table(found)))


def _table(found: list[Conversation]) -> str:
    rows = ["| conversationId | last active | cwd | first prompt |", "|---|---|---|---|"]
    rows += [f"| {c.id} | {c.last_active} | {_cell(c.cwd)} | {_cell(c.first_prompt)} |" for c in found]
    rows += ["", "Pass a conversationId to gemini-ask to continue that conversation."]
    return "\n".join(rows)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ") or "—"
