"""gemini-image: agy's image tool makes the file and the relay copies it into the project; on any other backend
with a Gemini API key the API makes it, as a durable job of the media toolset's kind."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from pydantic import Field

from gemini_relay.backends.capabilities import GENERATED_NAME_BYTES, IMAGE_SUFFIXES, ImageRequest
from gemini_relay.config import Settings
from gemini_relay.core.spec import MediaRequest
from gemini_relay.core.trusted_files import ignored_by_git
from gemini_relay.core.vocabulary import Effect
from gemini_relay.errors import BackendUnavailable, InputError
from gemini_relay.format import with_notices
from gemini_relay.jobs import JobNotFound
from gemini_relay.log import logger
from gemini_relay.tools.common.context import Deps, Reply
from gemini_relay.tools.common.definition import Doc, ToolDef, When
from gemini_relay.tools.common.inputs import AspectRatio, ImageSize, PathText
from gemini_relay.tools.common.media_config import MediaConfig
from gemini_relay.tools.common.media_generate import controls, media_ready, media_spec
from gemini_relay.tools.common.media_inputs import JobControls
from gemini_relay.tools.common.media_jobs import run_media
from gemini_relay.tools.common.output_schemas import MEDIA
from gemini_relay.tools.common.path_args import check_destination
from gemini_relay.tools.common.progress import CallProgress
from gemini_relay.tools.common.prompt_run import PromptRequest, run_prompt

DEFAULT_IMAGE_DIR = "gemini-images"
SUFFIX_ROOM = max(len(s) for s in IMAGE_SUFFIXES)  # the suffix the saved file may bring (.jpeg, .webp)


class ImageInput(JobControls):
    """The job controls apply when the Gemini API makes the image (a durable job); agy's image tool refuses them."""

    prompt: str = Field(min_length=1, description="What the image should show.")
    aspect_ratio: AspectRatio = "1:1"
    size: ImageSize | None = None
    output_path: PathText | None = Field(None, description="Where to save it, in the project.")


async def image(deps: Deps, args: ImageInput, call: CallProgress) -> Reply:
    saver = deps.registry.image_saver()
    if saver is not None and (args.async_ or args.max_wait_ms is not None or args.idempotency_key):
        raise InputError(
            "async, maxWaitMs and idempotencyKey apply when the Gemini API makes the image (a durable job); agy's "
            "image tool makes it within this call, so run it without them"
        )
    if saver is None:
        backend = deps.selection().backend
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
    notices = [*result.notices, *saved.notices]
    data: dict[str, Any] = {"path": str(path), "files": [str(path)], "model": result.record.model}
    if notices:
        data["notices"] = list(dict.fromkeys(notices))
    return Reply(
        with_notices(notices, body), {"path": str(path)}, structured=data, files=(path,), receipts=result.receipts
    )


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
    folder and every outputPath must resolve (through symlinks) inside the root. The built-in folder ignores
    itself (a `.gitignore` of `*`), so a generated image never shows in `git status` or gemini-assess.

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
    if settings.image_dir is not None:
        return real_default
    if not _inside(real_default, real_root):
        raise InputError(
            f"The default image folder {default_dir} resolves outside the project root ({real_root}); nothing was "
            "generated. Pass outputPath, or set GEMINI_RELAY_IMAGE_DIR to choose a folder on purpose."
        )
    return ignored_by_git(real_default)  # the built-in folder stays out of the diff


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _alt(prompt: str) -> str:
    flat = " ".join(prompt.split()).replace("[", "(").replace("]", ")")
    return flat if len(flat) <= 80 else flat[:79] + "…"


async def image_api(deps: Deps, args: ImageInput, call: CallProgress) -> Reply:
    """gemini-image on the API path: one image, at outputPath (a folder, or a file name) or in the media folder."""
    config = MediaConfig.from_settings(deps.settings)
    out_dir, name = config.out_dir, None
    raw = (args.output_path or "").strip()
    if raw:
        folder = raw.endswith(("/", "\\")) or os.path.isdir(config.root / raw)  # noqa: PTH112 - False, not ENAMETOOLONG
        target = Path(raw) if folder else Path(raw).parent
        room = GENERATED_NAME_BYTES if folder else 0  # a name given is checked below, with its suffix
        out_dir = config.output_dir(str(target), "outputPath", shown=repr(raw), room=room)
        if not folder:
            suffixed = Path(raw).suffix.lower() in IMAGE_SUFFIXES
            check_destination(out_dir, Path(raw).name, "outputPath", room=0 if suffixed else len(".png"))
            name = Path(raw).name if suffixed else Path(raw).name + ".png"
    else:
        out_dir = config.output_dir(None)
    media = MediaRequest(
        kind="image",
        out_dir=str(out_dir),
        model=config.image_model,
        aspect_ratio=args.aspect_ratio,
        image_size=args.size,
        target_name=name,
    )
    return await run_media(deps, call, media_spec(deps, call, args.prompt, media), controls(args))


DOC = Doc(
    lambda upstream: (
        "Generate an image and save it to a file; answers with its path. "
        + ("agy's own image tool makes it." if upstream.makes_images else "Needs a Gemini API key.")
    ),
    prompt="Generate an image with Gemini and save it to a file.",
    when=When(
        40,
        lambda upstream: "an image file" + ("" if upstream.makes_images else ", made by the Gemini API (an API key)"),
    ),
)
TOOL = ToolDef("gemini-image", ImageInput, image, Effect.CREATES, DOC, output_schema=MEDIA)
