"""gemini-video: a short video with Veo (text to video, or image to video from the first reference), as MP4."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from gemini_relay.core.spec import MediaRequest
from gemini_relay.core.vocabulary import Toolset
from gemini_relay.tools.common.context import Deps, Reply
from gemini_relay.tools.common.definition import ToolDef
from gemini_relay.tools.common.media_config import MediaConfig
from gemini_relay.tools.common.media_generate import AS_A_JOB, controls, media_spec, references
from gemini_relay.tools.common.media_inputs import ReferencesInput
from gemini_relay.tools.common.media_jobs import run_media
from gemini_relay.tools.common.progress import CallProgress

VideoAspect = Literal["16:9", "9:16"]


class VideoInput(ReferencesInput):
    prompt: str = Field(min_length=1, description="What the video should show.")
    model: str | None = Field(None, description="Video model id (default GEMINI_VIDEO_MODEL, a Veo model).")
    aspect_ratio: VideoAspect | None = Field(None, description="'16:9' or '9:16'.")
    duration_seconds: int | None = Field(None, ge=1, le=60, description="Length in seconds, where the model allows.")
    negative_prompt: str | None = Field(None, max_length=2000, description="What the video should avoid.")


async def video(deps: Deps, args: VideoInput, call: CallProgress) -> Reply:
    config = MediaConfig.from_settings(deps.settings)
    media = MediaRequest(
        kind="video",
        out_dir=str(config.output_dir(args.output_dir)),
        model=args.model or config.video_model,
        references=await references(deps, config, args),
        aspect_ratio=args.aspect_ratio,
        duration_seconds=args.duration_seconds,
        negative_prompt=args.negative_prompt,
        file_stem=args.filename,
        timeout_ms=config.request_timeout_ms(args.timeout_ms, image=False),
    )
    return await run_media(deps, call, media_spec(deps, call, args.prompt, media), controls(args))


TOOL = ToolDef(
    name="gemini-video",
    toolset=Toolset.MEDIA,
    description=(
        "Generate a short video with Veo (text to video, or image to video from the first reference); written as "
        "MP4. Takes minutes: prefer async or maxWaitMs." + AS_A_JOB
    ),
    input_model=VideoInput,
    handler=video,
    read_only=False,
    prompt_description="Generate a video with Veo.",
)
