"""gemini-plan: a phased implementation blueprint from a read-only planning run."""

from __future__ import annotations

from pydantic import Field

from gemini_relay.content.plan_prompt import build_plan_prompt
from gemini_relay.core.vocabulary import Effect
from gemini_relay.format import gemini_reply
from gemini_relay.tools.common.context import Deps, Reply
from gemini_relay.tools.common.controls import images_field, timeout_field
from gemini_relay.tools.common.definition import Doc, ToolDef, When
from gemini_relay.tools.common.inputs import Effort, PathText, ToolInput
from gemini_relay.tools.common.output_schemas import PLAN_SCHEMA, answer_data
from gemini_relay.tools.common.progress import CallProgress
from gemini_relay.tools.common.prompt_images import gather_images
from gemini_relay.tools.common.prompt_run import PromptRequest, run_prompt


class PlanInput(ToolInput):
    task: str = Field(min_length=1, description="The feature, refactor or goal to plan.")
    context: str | None = Field(None, description="Extra context or constraints; @path includes files.")
    model: str | None = Field(None, description="A model id, or 'flash' or 'pro'.")
    effort: Effort = "high"
    add_dirs: list[PathText] | None = Field(None, description="Extra directories the agent may read.")
    include_usage: bool = True
    timeout_seconds: float | None = timeout_field()
    images: list[PathText] | None = images_field()


async def plan(deps: Deps, args: PlanInput, call: CallProgress) -> Reply:
    result = await run_prompt(
        deps,
        call,
        PromptRequest(
            tool=call.tool,
            prompt=build_plan_prompt(args.task, args.context),
            model=args.model,
            effort=args.effort,
            mode="plan",
            add_dirs=args.add_dirs,
            timeout_seconds=args.timeout_seconds,
            images=await gather_images(deps, args.images),
            explicit=frozenset(args.model_fields_set),
        ),
    )
    outcome = result.outcome
    usage = outcome.usage if args.include_usage else None
    data = answer_data(usage=usage) if usage is not None else None
    text = gemini_reply(outcome.text, notices=result.notices, usage=usage, prefixed=False)
    return Reply(text, structured=data, receipts=result.receipts)


DOC = Doc(
    "A phased implementation plan from Gemini (dependencies, risks, verification), made read-only.",
    prompt="Create a detailed implementation blueprint for a task in read-only plan mode.",
    when=When(20, "a phased implementation plan (read-only)"),
)
TOOL = ToolDef("gemini-plan", PlanInput, plan, Effect.ASKS, DOC, output_schema=PLAN_SCHEMA)
