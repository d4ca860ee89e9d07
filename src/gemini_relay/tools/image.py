"""gemini-image: image generation needs the agy or API backend; the Gemini CLI cannot produce image files."""

from __future__ import annotations

from gemini_relay.errors import BackendUnavailable
from gemini_relay.tools.context import Deps, Reply
from gemini_relay.tools.progress import CallProgress
from gemini_relay.tools.schemas import ImageInput


async def image(deps: Deps, args: ImageInput, call: CallProgress) -> Reply:
    backend = deps.selection().backend
    raise BackendUnavailable(
        f"gemini-image needs the agy backend (GEMINI_MCP_BACKEND=agy) or the Gemini API backend; the active "
        f"{backend.value} backend (Gemini CLI) cannot generate image files."
    )
