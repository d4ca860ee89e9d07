"""gemini-help: the active backend CLI's --help; no token is spent."""

from __future__ import annotations

from gemini_relay.tools.common.context import Deps, Reply
from gemini_relay.tools.common.definition import ToolDef
from gemini_relay.tools.common.inputs import EmptyInput
from gemini_relay.tools.common.progress import CallProgress


async def help_(deps: Deps, args: EmptyInput, call: CallProgress) -> Reply:
    return Reply(await deps.registry.shows_help().help_text())


TOOL = ToolDef(
    name="gemini-help",
    toolset=None,
    description="Show the active backend CLI's --help.",
    input_model=EmptyInput,
    handler=help_,
    read_only=True,
    idempotent=True,
    open_world=False,
    prompt_description="Receive CLI help information for the active Gemini backend.",
)
