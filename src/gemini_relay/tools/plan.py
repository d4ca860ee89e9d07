"""gemini-plan (read-only planning run) and gemini-brainstorm (methodology prompt builder)."""

from __future__ import annotations

from gemini_relay.content.brainstorm import build_brainstorm_prompt
from gemini_relay.content.plan import build_plan_prompt
from gemini_relay.format import gemini_reply
from gemini_relay.tools.common.context import Deps, Reply
from gemini_relay.tools.common.inputs import BrainstormInput, PlanInput
from gemini_relay.tools.common.output_schemas import answer_data
from gemini_relay.tools.common.progress import CallProgress
from gemini_relay.tools.common.runner import PromptRequest, run_prompt


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
            explicit=frozenset(args.model_fields_set),
        ),
    )
    outcome = result.outcome
    usage = outcome.usage if args.include_usage else None
    data = answer_data(usage=usage) if usage is not None else None
    return Reply(gemini_reply(outcome.text, notices=result.notices, usage=usage, prefixed=False), structured=data)


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
            explicit=frozenset(args.model_fields_set),
        ),
    )
    return Reply(gemini_reply(result.outcome.text, notices=result.notices, prefixed=False))
