"""gemini-models: the models the active backend accepts, with the aliases and the default."""

from __future__ import annotations

from gemini_relay.format import with_notices
from gemini_relay.tools.common import output_schemas as out
from gemini_relay.tools.common.context import Deps, Reply
from gemini_relay.tools.common.definition import ToolDef
from gemini_relay.tools.common.inputs import EmptyInput
from gemini_relay.tools.common.progress import CallProgress


async def models(deps: Deps, args: EmptyInput, call: CallProgress) -> Reply:
    listing = await deps.registry.models().model_listing()
    data = {"backend": deps.selection().backend, "notices": listing.notices}  # the listing itself is the text
    return Reply(with_notices(listing.notices, "\n".join(listing.lines)), structured=data)


TOOL = ToolDef(
    name="gemini-models",
    toolset=None,
    description="List the models the active backend accepts, with the aliases and the default. No model turn.",
    input_model=EmptyInput,
    handler=models,
    read_only=True,
    idempotent=True,
    open_world=False,
    prompt_description="List the models the active Gemini backend accepts.",
    output_schema=out.MODELS,
)
