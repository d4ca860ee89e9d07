"""gemini-echo: a tiny extra tool, declared the way every real one is (compare tools/core/ping.py): its input model,
its handler, and its one definition. test_surface.py adds it to the review toolset's list, the one line a new tool
takes, and sees it everywhere a client looks."""

from __future__ import annotations

from pydantic import Field

from gemini_relay.core.vocabulary import Effect, Toolset
from gemini_relay.tools.common.context import Deps, Reply
from gemini_relay.tools.common.definition import Doc, ToolDef, When
from gemini_relay.tools.common.inputs import ToolInput
from gemini_relay.tools.common.progress import CallProgress


class EchoInput(ToolInput):
    text: str = Field(min_length=1, description="What to say back.")
    shout: bool = Field(False, description="Say it in capitals.")


async def echo(deps: Deps, args: EchoInput, call: CallProgress) -> Reply:
    return Reply(args.text.upper() if args.shout else args.text)


DOC = Doc(
    "Say the text back, in-process.",
    prompt="Echo a text.",
    when=When(65, "the text said back"),
)
TOOL = ToolDef("gemini-echo", EchoInput, echo, Effect.LOCAL, DOC, toolset=Toolset.REVIEW)
