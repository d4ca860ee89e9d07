"""gemini-cancel: stop every queued or running run; each stopped call fails with `<tool> was cancelled by …`."""

from __future__ import annotations

from gemini_relay.core.vocabulary import Effect
from gemini_relay.tools.common.context import Deps, Reply
from gemini_relay.tools.common.definition import Doc, ToolDef
from gemini_relay.tools.common.inputs import EmptyInput
from gemini_relay.tools.common.progress import CallProgress


async def cancel(deps: Deps, args: EmptyInput, call: CallProgress) -> Reply:
    count = deps.runs.cancel_all("was cancelled by gemini-cancel")
    return Reply("Nothing was running." if count == 0 else f"Cancelled {count} run(s).")


DOC = Doc(
    "Stop every Gemini run in flight, queued or running.",
    prompt="Cancel every running Gemini call.",
)
TOOL = ToolDef("gemini-cancel", EmptyInput, cancel, Effect.STOPS, DOC)
