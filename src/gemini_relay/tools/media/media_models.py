"""gemini-media-models: the image, video and music models the media tools accept, and the defaults."""

from __future__ import annotations

from gemini_relay.core.vocabulary import Effect, Toolset
from gemini_relay.tools.common.context import Deps, Reply
from gemini_relay.tools.common.definition import Doc, ToolDef
from gemini_relay.tools.common.inputs import EmptyInput
from gemini_relay.tools.common.media_config import MediaConfig
from gemini_relay.tools.common.progress import CallProgress

MEDIA_MODELS = (
    ("gemini-3.1-flash-image", "image: generate, edit, sets, interactions (Nano Banana 2; the default)"),
    ("gemini-3-pro-image", "image: highest quality, 4K (Nano Banana Pro)"),
    ("gemini-2.5-flash-image", "image: the earlier Nano Banana"),
    ("veo-3.1-generate-preview", "video: Veo 3.1 (gemini-video's default)"),
    ("veo-3.1-fast-generate-preview", "video: Veo 3.1 Fast"),
    ("lyria-3-clip-preview", "music: ~30 s clips (gemini-music's default)"),
    ("lyria-3-pro-preview", "music: longer pieces"),
)


def media_models_text(config: MediaConfig) -> str:
    rows = [f"- {model} — {label}" for model, label in MEDIA_MODELS]
    return "\n".join(
        [
            "Media models (Gemini API; pass the id as `model` to a media tool):",
            "",
            *rows,
            "",
            f"Defaults: image {config.image_model}, video {config.video_model}, music {config.music_model} "
            "(GEMINI_IMAGE_MODEL, GEMINI_VIDEO_MODEL, GEMINI_MUSIC_MODEL).",
        ]
    )


async def media_models(deps: Deps, args: EmptyInput, call: CallProgress) -> Reply:
    return Reply(media_models_text(MediaConfig.from_settings(deps.settings)))


DOC = Doc(
    "List the image, video and music models the media tools accept, and the defaults. No model turn.",
    prompt="List the Gemini media models.",
)
TOOL = ToolDef("gemini-media-models", EmptyInput, media_models, Effect.LOCAL, DOC, toolset=Toolset.MEDIA)
