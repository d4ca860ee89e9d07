"""gemini-models and gemini-conversations: what the active backend accepts, and its saved conversations."""

from __future__ import annotations

from gemini_relay.backends.gemini_cli import gemini_home
from gemini_relay.backends.gemini_cli_args import KNOWN_MODELS, MODEL_ALIASES
from gemini_relay.backends.gemini_sessions import list_conversations
from gemini_relay.errors import BackendUnavailable
from gemini_relay.jobs.vocabulary import BackendName
from gemini_relay.tools.context import Deps, Reply
from gemini_relay.tools.progress import CallProgress
from gemini_relay.tools.schemas import ConversationsInput, EmptyInput


async def models(deps: Deps, args: EmptyInput, call: CallProgress) -> Reply:
    backend = deps.selection().backend
    if backend is not BackendName.GEMINI:
        raise BackendUnavailable(f"gemini-models is not available for the {backend.value} backend in this version")
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


async def conversations(deps: Deps, args: ConversationsInput, call: CallProgress) -> Reply:
    backend = deps.selection().backend
    if backend is not BackendName.GEMINI:
        raise BackendUnavailable(f"gemini-conversations is not available for the {backend.value} backend yet")
    found = list_conversations(gemini_home(deps.gemini.env()), args.limit)
    if not found:
        return Reply("No saved Gemini CLI conversations were found.")
    rows = ["| conversationId | last active | cwd | first prompt |", "|---|---|---|---|"]
    rows += [f"| {c.id} | {c.last_active} | {_cell(c.cwd)} | {_cell(c.first_prompt)} |" for c in found]
    rows += ["", "Pass a conversationId to gemini-ask to continue that conversation."]
    return Reply("\n".join(rows))


def _cell(text: str) -> str:
    return text.replace("|", "\\|") or "—"
