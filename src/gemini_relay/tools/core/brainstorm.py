"""gemini-brainstorm: ideas from a methodology prompt, optionally scored."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from gemini_relay.content.brainstorm_prompt import build_brainstorm_prompt
from gemini_relay.core.vocabulary import Effect
from gemini_relay.format import gemini_reply
from gemini_relay.tools.common.context import Deps, Reply
from gemini_relay.tools.common.controls import timeout_field
from gemini_relay.tools.common.definition import Doc, ToolDef, When
from gemini_relay.tools.common.inputs import Effort, ToolInput
from gemini_relay.tools.common.output_schemas import TEXT_ANSWER
from gemini_relay.tools.common.progress import CallProgress
from gemini_relay.tools.common.prompt_run import PromptRequest, run_prompt

Methodology = Literal["divergent", "convergent", "scamper", "design-thinking", "lateral", "auto"]


class BrainstormInput(ToolInput):
    prompt: str = Field(min_length=1, description="The challenge or question.")
    model: str | None = Field(None, description="A model id, or 'flash' or 'pro'.")
    methodology: Methodology = "auto"
    domain: str | None = None
    constraints: str | None = Field(None, description="Limits: budget, time, technology.")
    existing_context: str | None = Field(None, description="What is tried or known already.")
    idea_count: int = Field(12, gt=0, le=100)
    include_analysis: bool = True
    effort: Effort | None = None
    timeout_seconds: float | None = timeout_field()


async def brainstorm(deps: Deps, args: BrainstormInput, call: CallProgress) -> Reply:
    prompt = build_brainstorm_prompt(
        args.prompt,
        methodology=args.methodology,
        domain=args.domain,
        constraints=args.constraints,
        existing_context=args.existing_context,
        idea_count=args.idea_count,
        include_analysis=args.include_analysis,
    )
    result = await run_prompt(
        deps,
        call,
        PromptRequest(
            tool=call.tool,
            prompt=prompt,
            model=args.model,
            effort=args.effort,
            timeout_seconds=args.timeout_seconds,
            explicit=frozenset(args.model_fields_set),
        ),
    )
    return Reply(gemini_reply(result.outcome.text, notices=result.notices, prefixed=False), receipts=result.receipts)


DOC = Doc(
    "Generate ideas with a methodology, optionally scored for feasibility, impact and innovation.",
    prompt="Brainstorm ideas on a challenge with Gemini.",
    when=When(30, "ideas with a methodology"),
)
TOOL = ToolDef("gemini-brainstorm", BrainstormInput, brainstorm, Effect.ASKS, DOC, output_schema=TEXT_ANSWER)
