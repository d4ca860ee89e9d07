"""gemini-image: agy's image tool makes the file; the relay finds it and copies it into the project."""

from __future__ import annotations

import time
from pathlib import Path

from gemini_relay.backends.agy_image import image_prompt
from gemini_relay.core.vocabulary import BackendName
from gemini_relay.errors import BackendUnavailable
from gemini_relay.format import with_notices
from gemini_relay.tools.context import Deps, Reply
from gemini_relay.tools.progress import CallProgress
from gemini_relay.tools.runner import PromptRequest, run_prompt
from gemini_relay.tools.schemas import ImageInput

DEFAULT_IMAGE_DIR = "gemini-images"


async def image(deps: Deps, args: ImageInput, call: CallProgress) -> Reply:
    backend = deps.selection().backend
    if backend is not BackendName.AGY:
        raise BackendUnavailable(
            f"gemini-image needs the agy backend (GEMINI_MCP_BACKEND=agy); the active {backend.value} backend "
            "(Gemini CLI) cannot generate image files."
        )
    since = time.time()
    result = await run_prompt(
        deps,
        call,
        PromptRequest(tool=call.tool, prompt=image_prompt(args.prompt, args.aspect_ratio, args.size)),
    )
    saved = await deps.agy.save_image(
        result.record,
        since=since,
        output_path=args.output_path,
        default_dir=image_dir(deps),
        aspect_ratio=args.aspect_ratio,
        size=args.size,
    )
    path = saved.path.resolve()
    body = f"![{_alt(args.prompt)}]({path.as_uri()})\n\nSaved to: {path}"
    return Reply(with_notices([*result.notices, *saved.notices], body), {"path": str(path)})


def image_dir(deps: Deps) -> Path:
    return deps.settings.image_dir or deps.settings.project_root / DEFAULT_IMAGE_DIR


def _alt(prompt: str) -> str:
    flat = " ".join(prompt.split()).replace("[", "(").replace("]", ")")
    return flat if len(flat) <= 80 else flat[:79] + "…"
