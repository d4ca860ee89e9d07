"""gemini-help: the active backend's help (a CLI's --help); no token is spent."""

from __future__ import annotations

from gemini_relay.core.vocabulary import Effect
from gemini_relay.tools.common.context import Deps, Reply
from gemini_relay.tools.common.definition import Doc, ToolDef
from gemini_relay.tools.common.inputs import EmptyInput
from gemini_relay.tools.common.progress import CallProgress


async def help_(deps: Deps, args: EmptyInput, call: CallProgress) -> Reply:
    return Reply(await deps.registry.shows_help().help_text())


DOC = Doc(
    lambda upstream: (
        f"Show the {upstream.title}'s --help." if upstream.agent else f"Show what the {upstream.label} takes."
    ),
    prompt="Receive help information for the active Gemini backend.",
)
TOOL = ToolDef("gemini-help", EmptyInput, help_, Effect.LOCAL, DOC)
