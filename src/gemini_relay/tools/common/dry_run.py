"""`dryRun`: what a prompt would cost, counted and priced, with no model turn (nothing is registered or run).

The price is of the input alone, by the rate card (content/rate_card.py) for the model the call would run on: the
output depends on the answer, so the reply says it is not included rather than guessing it.
"""

from __future__ import annotations

from typing import Any

from gemini_relay.content.rate_card import Usage, estimate_cost, load_rate_card
from gemini_relay.tools.common.context import Deps, Reply
from gemini_relay.tools.common.context_pack import Prepared, context_meta, count_text, method_label, model_id


async def dry_run_reply(deps: Deps, prepared: Prepared, model: str | None) -> Reply:
    """The token count and estimated input cost of `prepared.text`; the model is never called."""
    count, error = await count_text(prepared, prepared.text)
    backend = deps.selection().backend
    priced_as = model_id(model) if model else deps.registry.default_model(backend)
    cost = (
        estimate_cost(priced_as, Usage(input_tokens=count.tokens), load_rate_card(deps.settings.env))
        if (priced_as)
        else None
    )
    label = method_label(count, prepared.counter_model)
    lines = [
        "Dry run: nothing was sent to the model.",
        f"Prompt: {count.tokens:,} tokens ({label}).",
    ]
    if error:
        lines.append(f"The API could not count ({error}), so this is the estimate.")
    if cost is not None:
        lines.append(
            f"Estimated input cost on {cost.model}: ${cost.usd:.6f} (rate card as of {cost.as_of}; the answer's "
            "output tokens are not included)."
        )
    else:
        lines.append(f"No price: the rate card has no entry for {priced_as or 'the default model'}.")
    data: dict[str, Any] = {
        "dryRun": {
            "promptTokens": count.tokens,
            "method": count.method.value,
            "model": priced_as,
            "estimatedInputUsd": cost.usd if cost is not None else None,
            "rateCardAsOf": cost.as_of if cost is not None else None,
        }
    }
    if prepared.packed is not None:
        data["context"] = context_meta(prepared.packed, prepared.counter_model)
    notices = "".join(f"⚠️ {n}\n" for n in prepared.notices)
    return Reply((notices + "\n" if notices else "") + "\n".join(lines), structured=data)
