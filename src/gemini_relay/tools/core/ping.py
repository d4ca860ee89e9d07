"""gemini-ping: the server answers, in-process; no token is spent."""

from __future__ import annotations

from pydantic import Field

from gemini_relay.core.vocabulary import Effect
from gemini_relay.tools.common.context import Deps, Reply
from gemini_relay.tools.common.definition import Doc, ToolDef
from gemini_relay.tools.common.inputs import ToolInput
from gemini_relay.tools.common.progress import CallProgress


class PingInput(ToolInput):
    prompt: str = Field("", description="Text to echo.")


async def ping(deps: Deps, args: PingInput, call: CallProgress) -> Reply:
    return Reply(args.prompt or "Pong!")


DOC = Doc(
    "Check the server answers: Pong!, or the prompt echoed.",
    prompt="Echo test message.",
)
TOOL = ToolDef("gemini-ping", PingInput, ping, Effect.LOCAL, DOC)
