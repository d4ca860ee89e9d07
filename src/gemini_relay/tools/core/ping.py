"""gemini-ping: the server answers, in-process; no token is spent."""

from __future__ import annotations

from pydantic import Field

from gemini_relay.core.vocabulary import Effect
from gemini_relay.tools.common.context import Deps, Reply
from gemini_relay.tools.common.definition import ToolDef
from gemini_relay.tools.common.inputs import ToolInput
from gemini_relay.tools.common.progress import CallProgress


class PingInput(ToolInput):
    prompt: str = Field("", description="Text to echo.")


async def ping(deps: Deps, args: PingInput, call: CallProgress) -> Reply:
    return Reply(args.prompt or "Pong!")


TOOL = ToolDef(
    name="gemini-ping",
    description="Check the server answers: Pong!, or the prompt echoed.",
    input_model=PingInput,
    handler=ping,
    effect=Effect.LOCAL,
    prompt_description="Echo test message.",
)
