"""gemini-usage: token usage and estimated cost of the Gemini API generations in the shared job store."""

from __future__ import annotations

from typing import Any

from gemini_relay.content.rate_card import Usage as CostUsage
from gemini_relay.content.rate_card import estimate_cost, load_rate_card
from gemini_relay.core.vocabulary import Effect, RunState, Toolset
from gemini_relay.errors import InputError
from gemini_relay.tools.common import output_schemas as out
from gemini_relay.tools.common.context import Deps, Reply
from gemini_relay.tools.common.definition import Doc, ToolDef
from gemini_relay.tools.common.inputs import ToolInput
from gemini_relay.tools.common.progress import CallProgress

DEFAULT_VIDEO_SECONDS = 8  # Veo's default clip length, when the call did not name one


class UsageInput(ToolInput):
    pass


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
    return Reply(_markdown(data), data, structured=data)


def _markdown(data: dict[str, Any]) -> str:
    """The total first, then a row per call; a call whose model is not on the card says how to price it."""
    calls: list[dict[str, Any]] = data["calls"]
    card = data["rate_card"]
    plural = "s" if len(calls) != 1 else ""
    head = (
        f"**Gemini API usage**: ≈ ${_usd(data['estimated_usd'])} for {len(calls)} call{plural} · "
        f"{data['input_tokens']} in / {data['output_tokens']} out tokens · rate card of {card['as_of']}"
    )
    if not calls:
        return f"{head}\n\nNo finished generations are recorded yet.\n\n{data['note']}"
    rows = ["| job | tool | model | in | out | ≈ USD |", "|---|---|---|---|---|---|"]
    rows += [
        f"| `{c['job_id']}` | {c['tool']} | {c['model']} | {c['input_tokens']} | {c['output_tokens']} | "
        f"{'not priced' if c['estimated_usd'] is None else _usd(c['estimated_usd'])} |"
        for c in calls
    ]
    parts = [head, "\n".join(rows)]
    if data["unpriced_calls"]:
        parts.append(
            f"{data['unpriced_calls']} call(s) not priced: their model is not on the rate card (agy's non-Gemini "
            "models are billed by the Antigravity plan, not per token); GEMINI_RATE_CARD can name a card that does."
        )
    return "\n\n".join([*parts, data["note"]])


DOC = Doc(
    "Token usage of this server's Gemini API calls so far, with an estimated USD cost priced per call against "
    "its own model from a dated rate card (GEMINI_RATE_CARD overrides it). Call before and after a workflow "
    "and subtract.",
    prompt="Show Gemini token usage and estimated cost.",
)
TOOL = ToolDef(
    "gemini-usage", UsageInput, usage, Effect.LOCAL_LIVE, DOC, toolset=Toolset.MEDIA, output_schema=out.USAGE_REPORT
)


def _usd(amount: float) -> str:
    """0.000039, not 3.9e-05: a person reads dollars in decimals."""
    return f"{amount:.6f}".rstrip("0").rstrip(".") or "0"
