"""gemini-image-set: a consistent set, a master image and one image per scene, each given the master."""

from __future__ import annotations

from pydantic import Field

from gemini_relay.core.vocabulary import Toolset
from gemini_relay.tools.common.context import Deps, Reply
from gemini_relay.tools.common.definition import ToolDef
from gemini_relay.tools.common.progress import CallProgress
from gemini_relay.tools.media.generate import AS_A_JOB, image_job
from gemini_relay.tools.media.inputs import ImageOptions


class ImageSetInput(ImageOptions):
    master_prompt: str = Field(min_length=1, description="The master image: the subject and style every scene keeps.")
    scenes: list[str] = Field(min_length=1, max_length=8, description="One prompt per further image of the set.")


async def image_set(deps: Deps, args: ImageSetInput, call: CallProgress) -> Reply:
    return await image_job(deps, call, args, "set", args.master_prompt, scenes=tuple(args.scenes))


TOOL = ToolDef(
    name="gemini-image-set",
    toolset=Toolset.MEDIA,
    description=(
        "Generate a consistent set: a master image, then one image per scene, each given the master and every "
        "reference image so the subject stays the same." + AS_A_JOB
    ),
    input_model=ImageSetInput,
    handler=image_set,
    read_only=False,
    prompt_description="Generate a consistent set of images with Gemini.",
)
