"""gemini-usage: token usage and estimated cost of the Gemini API generations in the shared job store."""

from __future__ import annotations

import json
from typing import Any

from gemini_relay.content.rate_card import Usage as CostUsage
from gemini_relay.content.rate_card import estimate_cost, load_rate_card
from gemini_relay.core.vocabulary import RunState, Toolset
from gemini_relay.errors import InputError
from gemini_relay.tools.common.context import Deps, Reply
from gemini_relay.tools.common.definition import ToolDef
from gemini_relay.tools.common.inputs import ToolInput
from gemini_relay.tools.common.progress import CallProgress

DEFAULT_VIDEO_SECONDS = 8  # Veo's default clip length, when the call did not name one


class UsageInput(ToolInput):
    pass


def _json(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False)


async def usage(deps: Deps, args: UsageInput, call: CallProgress) -> Reply:
    """Token usage and estimated cost of the generations in the shared job store (every server's, like gemini-jobs:
    with the relay host the host owns every job), each priced against its own model."""
    if deps.jobs is None:
        raise InputError("Usage is read from the job store, and this server runs without one")
    store = deps.jobs.store
    card = load_rate_card(deps.settings.env)
    calls: list[dict[str, Any]] = []
    total, unpriced = 0.0, 0
    for job_id in store.job_ids():
        try:
            meta = store.meta(job_id)
        except InputError:
            continue
        stored = store.result(job_id)
        if stored is None:
            continue
        result = stored.result
        if result.state is not RunState.DONE or result.usage is None:
            continue
        media = meta.spec.media
        model = (media.model if media else None) or result.model or meta.spec.model or "unknown"
        images = sum(1 for f in result.files if f.endswith((".png", ".jpg", ".webp")))
        seconds = float((media.duration_seconds or DEFAULT_VIDEO_SECONDS) if media and media.kind == "video" else 0)
        cost_usage = CostUsage(
            input_tokens=result.usage.input_tokens,
            output_tokens=result.usage.output_tokens,
            images=images,
            video_seconds=seconds,
        )
        estimate = estimate_cost(model, cost_usage, card)
        row: dict[str, Any] = {
            "job_id": job_id,
            "tool": meta.tool,
            "model": model,
            "input_tokens": result.usage.input_tokens,
            "output_tokens": result.usage.output_tokens,
            "estimated_usd": estimate.usd if estimate else None,
        }
        if estimate is None:
            unpriced += 1
        else:
            total += estimate.usd
        calls.append(row)
    data = {
        "calls": calls,
        "input_tokens": sum(c["input_tokens"] for c in calls),
        "output_tokens": sum(c["output_tokens"] for c in calls),
        "estimated_usd": round(total, 6),
        "unpriced_calls": unpriced,
        "rate_card": {"as_of": card.as_of, "source": card.source},
        "note": "An estimate from a dated rate card (GEMINI_RATE_CARD overrides it); the API has no balance to read.",
    }
    return Reply(_json(data), data)


TOOL = ToolDef(
    name="gemini-usage",
    toolset=Toolset.MEDIA,
    description=(
        "Token usage of this server's Gemini API calls so far, with an estimated USD cost priced per call against "
        "its own model from a dated rate card (GEMINI_RATE_CARD overrides it). Call before and after a workflow "
        "and subtract."
    ),
    input_model=UsageInput,
    handler=usage,
    read_only=True,
    open_world=False,
    prompt_description="Show Gemini token usage and estimated cost.",
)
