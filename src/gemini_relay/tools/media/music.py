"""gemini-music: music with Lyria, as MP3."""

from __future__ import annotations

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


class MusicInput(ReferencesInput):
    prompt: str = Field(min_length=1, description="The music: genre, mood, instruments, tempo, lyrics.")
    model: str | None = Field(None, description="Lyria model id (default GEMINI_MUSIC_MODEL, lyria-3-clip-preview).")
    inline: bool = Field(False, description="Also return the audio bytes inline (costs context; the link is free).")


async def music(deps: Deps, args: MusicInput, call: CallProgress) -> Reply:
    config = MediaConfig.from_settings(deps.settings)
    media = MediaRequest(
        kind="music",
        out_dir=str(config.output_dir(args.output_dir)),
        model=args.model or config.music_model,
        references=await references(deps, config, args),
        file_stem=args.filename,
        timeout_ms=config.request_timeout_ms(args.timeout_ms, image=False),
    )
    return await run_media(deps, call, media_spec(deps, call, args.prompt, media), controls(args, args.inline))


TOOL = ToolDef(
    name="gemini-music",
    toolset=Toolset.MEDIA,
    description="Generate music with Lyria (lyria-3-clip-preview, ~30 s, by default); written as MP3." + AS_A_JOB,
    input_model=MusicInput,
    handler=music,
    read_only=False,
    prompt_description="Generate music with Lyria.",
)
