"""Tool definitions of the `media` toolset (GEMINI_RELAY_TOOLSETS=media), in registry order."""

from __future__ import annotations

from gemini_relay.tools import media, media_admin
from gemini_relay.tools.common.context import ToolDef
from gemini_relay.tools.common.inputs import EmptyInput
from gemini_relay.tools.media_schemas import (
    FilesInput,
    ImageEditInput,
    ImageInteractInput,
    ImageSetInput,
    MusicInput,
    UsageInput,
    VideoInput,
)
from gemini_relay.tools.names import ToolName

_JOBS = (
    " Runs as a durable job: async answers with a jobId, maxWaitMs hands one back after a budget, idempotencyKey "
    "returns the recorded result instead of billing again. Answers with the absolute path, a file:/// link and a "
    "resource_link."
)

MEDIA_DEFS = {
    ToolName.IMAGE_EDIT: ToolDef(
        ToolName.IMAGE_EDIT,
        "Edit an image or compose several with a text instruction (Gemini API image models); without reference "
        "images it generates from the prompt. References: images (local paths), imagesFileUris, imagesUrl, and "
        "imagesBase64 last. For a series of edits use gemini-image-interact." + _JOBS,
        ImageEditInput,
        media.image_edit,
        read_only=False,
        prompt_description="Edit or compose images with Gemini.",
    ),
    ToolName.IMAGE_SET: ToolDef(
        ToolName.IMAGE_SET,
        "Generate a consistent set: a master image, then one image per scene, each given the master and every "
        "reference image so the subject stays the same." + _JOBS,
        ImageSetInput,
        media.image_set,
        read_only=False,
        prompt_description="Generate a consistent set of images with Gemini.",
    ),
    ToolName.IMAGE_INTERACT: ToolDef(
        ToolName.IMAGE_INTERACT,
        "Iterative image refinement through the Interactions API: chain a turn with previousInteractionId or "
        "continueLast (resumed from the newest <image>.json sidecar, even after a restart). A chained 404 is "
        "waited out (GEMINI_CHAIN_RETRY_MS), then re-anchored on that turn's image." + _JOBS,
        ImageInteractInput,
        media.image_interact,
        read_only=False,
        prompt_description="Refine an image over several turns with Gemini.",
    ),
    ToolName.VIDEO: ToolDef(
        ToolName.VIDEO,
        "Generate a short video with Veo (text to video, or image to video from the first reference); written as "
        "MP4. Takes minutes: prefer async or maxWaitMs." + _JOBS,
        VideoInput,
        media.video,
        read_only=False,
        prompt_description="Generate a video with Veo.",
    ),
    ToolName.MUSIC: ToolDef(
        ToolName.MUSIC,
        "Generate music with Lyria (lyria-3-clip-preview, ~30 s, by default); written as MP3." + _JOBS,
        MusicInput,
        media.music,
        read_only=False,
        prompt_description="Generate music with Lyria.",
    ),
    ToolName.FILES: ToolDef(
        ToolName.FILES,
        "The Gemini Files API: upload a reference once (from path, url or dataBase64) and get a reusable files/<id> "
        "(kept ~48 h); list uploads; delete one (confirm: true required).",
        FilesInput,
        media_admin.files,
        read_only=False,
        destructive=True,
        prompt_description="Upload, list or delete Gemini Files API uploads.",
    ),
    ToolName.MEDIA_MODELS: ToolDef(
        ToolName.MEDIA_MODELS,
        "List the image, video and music models the media tools accept, and the defaults. No model turn.",
        EmptyInput,
        media_admin.media_models,
        read_only=True,
        idempotent=True,
        open_world=False,
        prompt_description="List the Gemini media models.",
    ),
    ToolName.USAGE: ToolDef(
        ToolName.USAGE,
        "Token usage of this server's Gemini API calls so far, with an estimated USD cost priced per call against "
        "its own model from a dated rate card (GEMINI_RATE_CARD overrides it). Call before and after a workflow "
        "and subtract.",
        UsageInput,
        media_admin.usage,
        read_only=True,
        open_world=False,
        prompt_description="Show Gemini token usage and estimated cost.",
    ),
}
