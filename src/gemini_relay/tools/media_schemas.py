"""Input models of the media toolset (camelCase on the wire, like every tool; see schemas.ToolInput)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from gemini_relay.tools.common.inputs import AspectRatio, ImageSize, PathText, ToolInput

Url = str
VideoAspect = Literal["16:9", "9:16"]


class JobControlsInput(ToolInput):
    async_: bool = Field(
        False,
        alias="async",
        description="Answer at once with a jobId instead of the result; collect it with gemini-status (jobs "
        "toolset). The generation runs on even if this server exits.",
    )
    max_wait_ms: int | None = Field(
        None,
        ge=0,
        le=3_600_000,
        description="Wait at most this long, then hand back the jobId (fast results stay in-band).",
    )
    idempotency_key: str | None = Field(
        None,
        min_length=1,
        max_length=200,
        description="A retry with the same key returns the recorded result (reused: true) instead of billing again.",
    )
    output_dir: PathText | None = Field(
        None, description="Folder for the files, inside the project root. Default: GEMINI_RELAY_MEDIA_DIR."
    )
    filename: str | None = Field(
        None, min_length=1, max_length=80, description="A word or two the file names start with (default: the prompt)."
    )


class ReferencesInput(JobControlsInput):
    images: list[PathText] | None = Field(
        None,
        max_length=14,
        description="Local reference images: paths inside the project root or GEMINI_RELAY_MEDIA_INPUT_DIR. No "
        "context cost; a file referenced again is uploaded to the Files API once.",
    )
    images_file_uris: list[str] | None = Field(
        None, max_length=14, description="Files API references (files/<id>) from gemini-files. No context cost."
    )
    images_url: list[Url] | None = Field(
        None,
        max_length=14,
        description="Public https image URLs, fetched by the server (private addresses refused, 15 MB cap). No "
        "context cost.",
    )
    images_base64: list[str] | None = Field(
        None,
        max_length=4,
        description="Last resort: base64 images through the tool call (~14k tokens each, corrupted by truncated "
        "reads). Prefer images, imagesFileUris or imagesUrl.",
    )


class ImageOptions(ReferencesInput):
    model: str | None = Field(None, description="Image model id (default GEMINI_IMAGE_MODEL, gemini-3.1-flash-image).")
    aspect_ratio: AspectRatio | None = Field(None, description="Aspect ratio of the image.")
    image_size: ImageSize | None = Field(None, description="Resolution: '512' (Flash only), '1K', '2K' or '4K'.")
    inline: bool = Field(False, description="Also return the image bytes inline (costs context; the link is free).")


class ImageEditInput(ImageOptions):
    prompt: str = Field(min_length=1, description="The edit or composition instruction.")
    count: int = Field(1, ge=1, le=4, description="How many variants to generate (each one is billed).")


class ImageSetInput(ImageOptions):
    master_prompt: str = Field(min_length=1, description="The master image: the subject and style every scene keeps.")
    scenes: list[str] = Field(min_length=1, max_length=8, description="One prompt per further image of the set.")


class ImageInteractInput(ImageOptions):
    input: str = Field(min_length=1, description="This turn's instruction.")
    previous_interaction_id: str | None = Field(
        None, min_length=1, max_length=128, description="Chain on an earlier turn (its interaction_id)."
    )
    continue_last: bool = Field(
        False, description="Chain on the newest turn (its sidecar in the output folder, so this survives restarts)."
    )


class VideoInput(ReferencesInput):
    prompt: str = Field(min_length=1, description="What the video should show.")
    model: str | None = Field(None, description="Video model id (default GEMINI_VIDEO_MODEL, a Veo model).")
    aspect_ratio: VideoAspect | None = Field(None, description="'16:9' or '9:16'.")
    duration_seconds: int | None = Field(None, ge=1, le=60, description="Length in seconds, where the model allows.")
    negative_prompt: str | None = Field(None, max_length=2000, description="What the video should avoid.")


class MusicInput(ReferencesInput):
    prompt: str = Field(min_length=1, description="The music: genre, mood, instruments, tempo, lyrics.")
    model: str | None = Field(None, description="Lyria model id (default GEMINI_MUSIC_MODEL, lyria-3-clip-preview).")
    inline: bool = Field(False, description="Also return the audio bytes inline (costs context; the link is free).")


class FilesInput(ToolInput):
    action: Literal["upload", "list", "delete"] = Field(description="upload a file, list uploads, or delete one.")
    path: PathText | None = Field(None, description="upload: a local file inside the project root or input folder.")
    url: Url | None = Field(None, description="upload: a public https image URL the server fetches.")
    data_base64: str | None = Field(None, description="upload: base64 bytes (last resort).")
    name: str | None = Field(None, max_length=128, description="delete: the files/<id> to delete.")
    confirm: bool = Field(False, description="delete: must be true; deleting cannot be undone.")
    limit: int = Field(50, ge=1, le=500, description="list: at most this many files.")


class UsageInput(ToolInput):
    pass
