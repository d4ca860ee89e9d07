"""gemini-image-interact: iterative image refinement through the Interactions API, chained turn by turn."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import AliasChoices, Field

from gemini_relay.core.spec import MediaRequest
from gemini_relay.core.vocabulary import Effect, Toolset
from gemini_relay.errors import InputError
from gemini_relay.tools.common.context import Deps, Reply
from gemini_relay.tools.common.definition import Doc, ToolDef
from gemini_relay.tools.common.media_config import MediaConfig
from gemini_relay.tools.common.media_generate import AS_A_JOB, controls, media_spec, references
from gemini_relay.tools.common.media_inputs import ImageOptions
from gemini_relay.tools.common.media_jobs import run_media
from gemini_relay.tools.common.progress import CallProgress

# The newest interaction per output folder in this process; after a restart the newest sidecar stands in for it.
_LAST_INTERACTION: dict[str, str] = {}


class ImageInteractInput(ImageOptions):
    input: str = Field(min_length=1, description="This turn's instruction.")
    previous_interaction_id: str | None = Field(
        None, min_length=1, max_length=128, description="Chain on an earlier turn (its interaction_id)."
    )
    continue_last: bool = Field(
        False, description="Chain on the newest turn (its sidecar in the output folder, so this survives restarts)."
    )
    thinking_level: Literal["minimal", "high"] | None = Field(
        None,
        validation_alias=AliasChoices("thinkingLevel", "thinking_level"),  # the seed's spelling carries over
        description="How much the model thinks before drawing: 'minimal' or 'high' (slower; default: the model's).",
    )


async def image_interact(deps: Deps, args: ImageInteractInput, call: CallProgress) -> Reply:
    config = MediaConfig.from_settings(deps.settings)
    previous = args.previous_interaction_id
    extra: dict[str, Any] = {}
    out_dir = config.output_dir(args.output_dir)
    if previous is None and args.continue_last:
        previous = _LAST_INTERACTION.get(str(out_dir))
        if previous is None:
            previous = deps.registry.media().latest_interaction(out_dir)
            if previous is None:
                raise InputError(
                    "no earlier turn to continue: no interaction sidecar in the output folder", field="continueLast"
                )
            extra = {"continued_from_sidecar": True, "previous_interaction_id": previous}
    media = MediaRequest(
        kind="interact",
        out_dir=str(out_dir),
        model=args.model or config.image_model,
        references=await references(deps, config, args),
        aspect_ratio=args.aspect_ratio,
        image_size=args.image_size,
        file_stem=args.filename,
        previous_interaction_id=previous,
        chain_retry_ms=config.chain_retry_ms,
        timeout_ms=config.request_timeout_ms(args.timeout_ms, args.image_size),
        thinking_level=args.thinking_level,
    )
    reply = await run_media(deps, call, media_spec(deps, call, args.input, media), controls(args, args.inline), extra)
    made = (reply.meta or {}).get("interaction_id")
    if isinstance(made, str):
        _LAST_INTERACTION[str(out_dir)] = made
    return reply


DOC = Doc(
    "Iterative image refinement through the Interactions API: chain a turn with previousInteractionId or "
    "continueLast (resumed from the newest <image>.json sidecar, even after a restart). A chained 404 is "
    "waited out (GEMINI_CHAIN_RETRY_MS), then re-anchored on that turn's image." + AS_A_JOB,
    prompt="Refine an image over several turns with Gemini.",
)
TOOL = ToolDef("gemini-image-interact", ImageInteractInput, image_interact, Effect.CREATES, DOC, toolset=Toolset.MEDIA)
