"""Veo video over raw REST (the SDK refuses generate_videos in API-key mode): start, poll, download the sample."""

from __future__ import annotations

import base64
from typing import Any

import anyio

from gemini_relay.backends.api.media.errors import MediaApiError, from_media_error, safety_block
from gemini_relay.backends.api.media.refs import Resolved
from gemini_relay.backends.api.media.rest import Rest
from gemini_relay.errors import RunFailed

POLL_FIRST, POLL_MAX = 0.5, 10.0  # Veo takes minutes: quick first look, then back off to a slow poll


async def generate(
    rest: Rest,
    model: str,
    prompt: str,
    refs: list[Resolved],
    *,
    aspect_ratio: str | None,
    duration: int | None,
    negative: str | None,
) -> bytes:
    instance: dict[str, Any] = {"prompt": prompt}
    image = next((r for r in refs if r.data is not None and r.mime_type.startswith("image/")), None)
    if image is not None and image.data is not None:  # image-to-video: the first inline still
        instance["image"] = {"bytesBase64Encoded": base64.b64encode(image.data).decode(), "mimeType": image.mime_type}
    parameters: dict[str, Any] = {}
    if aspect_ratio:
        parameters["aspectRatio"] = aspect_ratio
    if duration:
        parameters["durationSeconds"] = duration
    if negative:
        parameters["negativePrompt"] = negative
    try:
        operation = await rest.post(
            f"models/{model}:predictLongRunning", {"instances": [instance], "parameters": parameters}
        )
        name = str(operation.get("name") or "")
        poll = POLL_FIRST
        while not operation.get("done"):
            await anyio.sleep(poll)
            poll = min(poll * 2, POLL_MAX)
            operation = await rest.get(name)
        if operation.get("error"):
            error = operation["error"]
            raise MediaApiError(
                int(error.get("code") or 500), str(error.get("status") or ""), str(error.get("message"))
            )
        response = (operation.get("response") or {}).get("generateVideoResponse") or {}
        samples = response.get("generatedSamples") or []
        if not samples:
            reasons = "; ".join(response.get("raiMediaFilteredReasons") or []) or "no video came back"
            if response.get("raiMediaFilteredCount"):
                raise safety_block("video", reasons)
            raise RunFailed(f"gemini-api: the video operation ended without a video ({reasons})")
        video = samples[0].get("video") or {}
        if video.get("bytesBase64Encoded"):
            return base64.b64decode(video["bytesBase64Encoded"])
        return await rest.download(str(video.get("uri")))
    except MediaApiError as exc:
        raise from_media_error(exc, model=model, file_uris=[]) from exc
