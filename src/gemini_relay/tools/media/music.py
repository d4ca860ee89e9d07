"""gemini-music: music with Lyria, as MP3."""

from __future__ import annotations

from pydantic import Field

from gemini_relay.core.vocabulary import Effect, Toolset
from gemini_relay.tools.common.context import Deps, Reply
from gemini_relay.tools.common.definition import Doc, ToolDef
from gemini_relay.tools.common.media_generate import AS_A_JOB, media_job
from gemini_relay.tools.common.media_inputs import ReferencesInput
from gemini_relay.tools.common.progress import CallProgress


class MusicInput(ReferencesInput):
    prompt: str = Field(min_length=1, description="The music: genre, mood, instruments, tempo, lyrics.")
    model: str | None = Field(None, description="Lyria model id (default GEMINI_MUSIC_MODEL, lyria-3-clip-preview).")
    inline: bool = Field(False, description="Also return the audio bytes inline (costs context; the link is free).")


async def music(deps: Deps, args: MusicInput, call: CallProgress) -> Reply:
    return await media_job(deps, call, args, args.prompt, "music", model=args.model, inline=args.inline)


DOC = Doc(
    "Generate music with Lyria (lyria-3-clip-preview, ~30 s, by default); written as MP3." + AS_A_JOB,
    prompt="Generate music with Lyria.",
)
TOOL = ToolDef("gemini-music", MusicInput, music, Effect.CREATES, DOC, toolset=Toolset.MEDIA)
