"""gemini-image-set: a consistent set, a master image and one image per scene, each given the master."""

from __future__ import annotations

from typing import Any

from pydantic import AliasChoices, Field

from gemini_relay.core.vocabulary import Effect, Toolset
from gemini_relay.tools.common.context import Deps, Reply
from gemini_relay.tools.common.definition import Doc, ToolDef
from gemini_relay.tools.common.inputs import PathText
from gemini_relay.tools.common.media_generate import AS_A_JOB, image_job
from gemini_relay.tools.common.media_inputs import ImageOptions, ReferencesInput, Url
from gemini_relay.tools.common.progress import CallProgress


def _seed_name(field: str, camel: str) -> AliasChoices:
    """The relay's name first (the schema shows it), then seed 003's master_images_* names in both spellings."""
    seed = field.replace("images", "master_images", 1)
    return AliasChoices(camel, "master" + camel[0].upper() + camel[1:], seed)


def _master_reference(field: str, camel: str, most: int) -> Any:
    """The master's reference `field`, as ReferencesInput describes it, also by the seed's names."""
    description = ReferencesInput.model_fields[field].description
    return Field(None, max_length=most, validation_alias=_seed_name(field, camel), description=description)


class ImageSetInput(ImageOptions):
    master_prompt: str = Field(min_length=1, description="The master image: the subject and style every scene keeps.")
    scenes: list[str] = Field(min_length=1, max_length=8, description="One prompt per further image of the set.")
    # The references of the master (and so of every scene), also by the seed's names (master_images_url, …).
    images: list[PathText] | None = _master_reference("images", "images", 14)
    images_file_uris: list[str] | None = _master_reference("images_file_uris", "imagesFileUris", 14)
    images_url: list[Url] | None = _master_reference("images_url", "imagesUrl", 14)
    images_base64: list[str] | None = _master_reference("images_base64", "imagesBase64", 4)


async def image_set(deps: Deps, args: ImageSetInput, call: CallProgress) -> Reply:
    return await image_job(deps, call, args, "set", args.master_prompt, scenes=tuple(args.scenes))


DOC = Doc(
    "Generate a consistent set: a master image, then one image per scene, each given the master and every "
    "reference image so the subject stays the same." + AS_A_JOB,
    prompt="Generate a consistent set of images with Gemini.",
)
TOOL = ToolDef("gemini-image-set", ImageSetInput, image_set, Effect.CREATES, DOC, toolset=Toolset.MEDIA)
