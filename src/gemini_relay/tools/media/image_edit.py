"""gemini-image-edit: edit an image or compose several with a text instruction (or generate without references)."""

from __future__ import annotations

from pydantic import Field

from gemini_relay.core.vocabulary import Effect, Toolset
from gemini_relay.tools.common.context import Deps, Reply
from gemini_relay.tools.common.definition import Doc, ToolDef
from gemini_relay.tools.common.media_generate import AS_A_JOB, image_job
from gemini_relay.tools.common.media_inputs import ImageOptions
from gemini_relay.tools.common.progress import CallProgress


class ImageEditInput(ImageOptions):
    prompt: str = Field(min_length=1, description="The edit or composition instruction.")
    count: int = Field(1, ge=1, le=4, description="How many variants to generate (each one is billed).")


async def image_edit(deps: Deps, args: ImageEditInput, call: CallProgress) -> Reply:
    has_refs = any((args.images, args.images_file_uris, args.images_url, args.images_base64))
    return await image_job(deps, call, args, "edit" if has_refs else "image", args.prompt, count=args.count)


DOC = Doc(
    "Edit an image or compose several with a text instruction (Gemini API image models); without reference "
    "images it generates from the prompt. References: images (local paths), imagesFileUris, imagesUrl, and "
    "imagesBase64 last. For a series of edits use gemini-image-interact." + AS_A_JOB,
    prompt="Edit or compose images with Gemini.",
)
TOOL = ToolDef("gemini-image-edit", ImageEditInput, image_edit, Effect.CREATES, DOC, toolset=Toolset.MEDIA)
