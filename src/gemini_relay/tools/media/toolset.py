"""The `media` toolset (GEMINI_RELAY_TOOLSETS=media): images (edit, sets, interactions), video and music as durable
jobs on the Gemini API, the Files API, the media models and usage."""

from __future__ import annotations

from gemini_relay.tools.common.definition import AnyTool
from gemini_relay.tools.jobs import status, wait
from gemini_relay.tools.media import (
    files,
    image_edit,
    image_interact,
    image_set,
    media_models,
    music,
    usage,
    video,
)

TOOLS: tuple[AnyTool, ...] = (
    image_edit.TOOL,
    image_set.TOOL,
    image_interact.TOOL,
    video.TOOL,
    music.TOOL,
    files.TOOL,
    media_models.TOOL,
    usage.TOOL,
    status.TOOL,  # async generations are collected with these, with or without the jobs toolset
    wait.TOOL,
)
