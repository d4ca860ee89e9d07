"""gemini-video: a short video with Veo (text to video, or image to video from the first reference), as MP4."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from gemini_relay.core.vocabulary import Effect, Toolset
from gemini_relay.tools.common.context import Deps, Reply
from gemini_relay.tools.common.definition import Doc, ToolDef
from gemini_relay.tools.common.media_generate import AS_A_JOB, media_job
from gemini_relay.tools.common.media_inputs import ReferencesInput
from gemini_relay.tools.common.progress import CallProgress

VideoAspect = Literal["16:9", "9:16"]


class VideoInput(ReferencesInput):
    prompt: str = Field(min_length=1, description="What the video should show.")
    model: str | None = Field(None, description="Video model id (default GEMINI_VIDEO_MODEL, a Veo model).")
    aspect_ratio: VideoAspect | None = Field(None, description="'16:9' or '9:16'.")
    duration_seconds: int | None = Field(None, ge=1, le=60, description="Length in seconds, where the model allows.")
    negative_prompt: str | None = Field(None, max_length=2000, description="What the video should avoid.")


async def video(deps: Deps, args: VideoInput, call: CallProgress) -> Reply:
    return await media_job(
        deps,
        call,
        args,
        args.prompt,
        "video",
        model=args.model,
        aspect_ratio=args.aspect_ratio,
        duration_seconds=args.duration_seconds,
        negative_prompt=args.negative_prompt,
    )


DOC = Doc(
    "Generate a short video with Veo (text to video, or image to video from the first reference); written as "
    "MP4. Takes minutes: prefer async or maxWaitMs." + AS_A_JOB,
    prompt="Generate a video with Veo.",
)
TOOL = ToolDef("gemini-video", VideoInput, video, Effect.CREATES, DOC, toolset=Toolset.MEDIA)
