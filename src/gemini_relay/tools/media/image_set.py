"""gemini-image-set: a consistent set, a master image and one image per scene, each given the master."""

from __future__ import annotations

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


def _about(field: str) -> str | None:
    return ReferencesInput.model_fields[field].description


class ImageSetInput(ImageOptions):
    master_prompt: str = Field(min_length=1, description="The master image: the subject and style every scene keeps.")
    scenes: list[str] = Field(min_length=1, max_length=8, description="One prompt per further image of the set.")
    # The references of the master (and so of every scene), also by the seed's names (master_images_url, …).
    images: list[PathText] | None = Field(
        None, max_length=14, validation_alias=_seed_name("images", "images"), description=_about("images")
    )
    images_file_uris: list[str] | None = Field(
        None,
        max_length=14,
        validation_alias=_seed_name("images_file_uris", "imagesFileUris"),
        description=_about("images_file_uris"),
    )
    images_url: list[Url] | None = Field(
        None, max_length=14, validation_alias=_seed_name("images_url", "imagesUrl"), description=_about("images_url")
    )
    images_base64: list[str] | None = Field(
        None,
        max_length=4,
        validation_alias=_seed_name("images_base64", "imagesBase64"),
        description=_about("images_base64"),
    )


async def image_set(deps: Deps, args: ImageSetInput, call: CallProgress) -> Reply:
    return await image_job(deps, call, args, "set", args.master_prompt, scenes=tuple(args.scenes))


DOC = Doc(
    "Generate a consistent set: a master image, then one image per scene, each given the master and every "
    "reference image so the subject stays the same." + AS_A_JOB,
    prompt="Generate a consistent set of images with Gemini.",
)
TOOL = ToolDef("gemini-image-set", ImageSetInput, image_set, Effect.CREATES, DOC, toolset=Toolset.MEDIA)
