"""gemini-image: agy's image tool makes the file; the relay finds it and copies it into the project."""

from __future__ import annotations

import os
import time
from pathlib import Path

from gemini_relay.backends.capabilities import IMAGE_SUFFIXES, ImageRequest
from gemini_relay.config import Settings
from gemini_relay.errors import BackendUnavailable, InputError
from gemini_relay.format import with_notices
from gemini_relay.jobs.store.base import JobNotFound
from gemini_relay.log import logger
from gemini_relay.tools.context import Deps, Reply
from gemini_relay.tools.path_args import check_destination
from gemini_relay.tools.progress import CallProgress
from gemini_relay.tools.runner import PromptRequest, run_prompt
from gemini_relay.tools.schemas import ImageInput

DEFAULT_IMAGE_DIR = "gemini-images"
SUFFIX_ROOM = max(len(s) for s in IMAGE_SUFFIXES)  # the suffix the saved file may bring (.jpeg, .webp)


async def image(deps: Deps, args: ImageInput, call: CallProgress) -> Reply:
    saver = deps.registry.image_saver()
    if saver is None:
        backend = deps.selection().backend
        from gemini_relay.tools.media import image_api, media_ready  # noqa: PLC0415 - the media toolset's path

        if media_ready(deps):  # the Gemini API makes the image itself, as a durable job
            return await image_api(deps, args, call)
        raise BackendUnavailable(
            f"gemini-image needs a Gemini API key (GEMINI_API_KEY) or the agy backend (GEMINI_MCP_BACKEND=agy); "
            f"the active {backend} backend cannot generate image files."
        )
    # Jailed before the run: an escaping destination must not cost a generated (and billed) image.
    default_dir = jail_destination(
        deps.settings.project_root, args.output_path, image_dir(deps), deps.settings, name_room=saver.saved_name_bytes
    )
    since = time.time()
    result = await run_prompt(
        deps,
        call,
        PromptRequest(tool=call.tool, prompt=saver.image_prompt(args.prompt, args.aspect_ratio, args.size)),
    )
    request = ImageRequest(args.output_path, default_dir, args.aspect_ratio, args.size)
    saved = await saver.save_image(result.record, request, since=since)
    path = saved.path.resolve()
    _record_file(deps, result.record.run_id, path)
    body = f"![{_alt(args.prompt)}]({path.as_uri()})\n\nSaved to: {path}"
    return Reply(with_notices([*result.notices, *saved.notices], body), {"path": str(path)}, files=(path,))


def _record_file(deps: Deps, job_id: str, path: Path) -> None:
    """Note the saved image in the run's job, so the HTTP page can show it (no job without a state dir)."""
    if deps.jobs is None:
        return
    try:
        deps.jobs.store.record_files(job_id, [str(path)])
    except (JobNotFound, OSError) as exc:  # the image is saved and answered; only the page misses it
        logger.info("Could not record the image of job %s: %s", job_id, exc)


def image_dir(deps: Deps) -> Path:
    return deps.settings.image_dir or deps.settings.project_root / DEFAULT_IMAGE_DIR


def jail_destination(
    root: Path, output_path: str | None, default_dir: Path, settings: Settings, *, name_room: int
) -> Path:
    """The default folder, realpath-resolved, once the destination is known to stay inside the project root.

    A configured GEMINI_RELAY_IMAGE_DIR is the operator's choice and may lie anywhere; the built-in default
    folder and every outputPath must resolve (through symlinks) inside the root.

    Raises:
        InputError: outputPath, or the built-in default folder, resolves outside the root.
    """
    real_root = Path(os.path.realpath(root))
    if output_path is not None and output_path.strip():
        raw = output_path.strip()
        target = Path(os.path.realpath(real_root / Path(raw).expanduser()))
        if not _inside(target, real_root):
            raise InputError(
                f"Invalid arguments for gemini-image: outputPath: {raw!r} resolves outside the project root "
                f"({real_root}); nothing was generated."
            )
        if raw.endswith(("/", "\\")) or os.path.isdir(target):  # noqa: PTH112 - False, not ENAMETOOLONG
            check_destination(target, None, "outputPath", room=name_room)
        else:  # agy's suffix is added unless the name has an image suffix already
            suffixed = target.suffix.lower() in IMAGE_SUFFIXES
            check_destination(target.parent, target.name, "outputPath", room=0 if suffixed else SUFFIX_ROOM)
        return default_dir
    real_default = Path(os.path.realpath(default_dir))
    if settings.image_dir is None and not _inside(real_default, real_root):
        raise InputError(
            f"The default image folder {default_dir} resolves outside the project root ({real_root}); nothing was "
            "generated. Pass outputPath, or set GEMINI_RELAY_IMAGE_DIR to choose a folder on purpose."
        )
    return real_default


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _alt(prompt: str) -> str:
    flat = " ".join(prompt.split()).replace("[", "(").replace("]", ")")
    return flat if len(flat) <= 80 else flat[:79] + "…"
