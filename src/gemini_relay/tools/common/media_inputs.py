"""What the media toolset's input models share: the job controls, the reference images and the image options
(camelCase on the wire, like every tool; see common/inputs.ToolInput)."""

from __future__ import annotations

from pydantic import AliasChoices, Field

from gemini_relay.tools.common.controls import idempotency_key_field
from gemini_relay.tools.common.inputs import AspectRatio, ImageSize, PathText, ToolInput

Url = str


class JobControls(ToolInput):
    """async / maxWaitMs / idempotencyKey: also on the default toolset's gemini-image when the API makes it."""

    async_: bool = Field(
        False,
        alias="async",
        description="Answer at once with a jobId for gemini-status.",
    )
    max_wait_ms: int | None = Field(
        None,
        ge=0,
        le=3_600_000,
        description="Wait at most this long, then answer with the jobId.",
    )
    idempotency_key: str | None = idempotency_key_field("A retry with this key returns the recorded result.")


class JobControlsInput(JobControls):
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
    timeout_ms: int | None = Field(
        None,
        ge=1,
        le=3_600_000,
        validation_alias=AliasChoices("timeoutMs", "timeout_ms"),  # the seed's spelling carries over
        description="Bound on each upstream request in ms (default GEMINI_TIMEOUT_MS; for images 60000, 120000 at 4K).",
    )


class ImageOptions(ReferencesInput):
    model: str | None = Field(None, description="Image model id (default GEMINI_IMAGE_MODEL, gemini-3.1-flash-image).")
    aspect_ratio: AspectRatio | None = Field(None, description="Aspect ratio of the image.")
    image_size: ImageSize | None = Field(None, description="Resolution: '512' (Flash only), '1K', '2K' or '4K'.")
    inline: bool = Field(False, description="Also return the image bytes inline (costs context; the link is free).")
