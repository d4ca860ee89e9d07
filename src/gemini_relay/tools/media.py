"""The `media` toolset: images (generate, edit, set, interact), video, music, the Files API, models and usage.

Every generation is a job on the api backend (media_jobs.py); the Files API, models and usage answer in-process.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from gemini_relay.backends.capabilities import GENERATED_NAME_BYTES, IMAGE_SUFFIXES
from gemini_relay.core.spec import MediaRef, MediaRequest, RunSpec
from gemini_relay.errors import BackendUnavailable, InputError
from gemini_relay.tools import media_refs
from gemini_relay.tools.context import Deps, Reply
from gemini_relay.tools.media_config import MediaConfig
from gemini_relay.tools.media_jobs import Controls, run_media
from gemini_relay.tools.media_schemas import (
    ImageEditInput,
    ImageInteractInput,
    ImageOptions,
    ImageSetInput,
    JobControlsInput,
    MusicInput,
    ReferencesInput,
    VideoInput,
)
from gemini_relay.tools.path_args import check_destination
from gemini_relay.tools.progress import CallProgress
from gemini_relay.tools.schemas import ImageInput

# The newest interaction per output folder in this process; after a restart the newest sidecar stands in for it.
_LAST_INTERACTION: dict[str, str] = {}
MEDIA_MODELS = (
    ("gemini-3.1-flash-image", "image: generate, edit, sets, interactions (Nano Banana 2; the default)"),
    ("gemini-3-pro-image", "image: highest quality, 4K (Nano Banana Pro)"),
    ("gemini-2.5-flash-image", "image: the earlier Nano Banana"),
    ("veo-3.1-generate-preview", "video: Veo 3.1 (gemini-video's default)"),
    ("veo-3.1-fast-generate-preview", "video: Veo 3.1 Fast"),
    ("lyria-3-clip-preview", "music: ~30 s clips (gemini-music's default)"),
    ("lyria-3-pro-preview", "music: longer pieces"),
)


def media_ready(deps: Deps) -> bool:
    """Whether a backend can generate media now (the Gemini API with a key)."""
    try:
        deps.registry.media().media_ready()
    except BackendUnavailable:
        return False
    return True


def _controls(args: JobControlsInput, inline: bool = False) -> Controls:
    return Controls(args.async_, args.max_wait_ms, args.idempotency_key, inline)


async def _refs(deps: Deps, config: MediaConfig, args: ReferencesInput) -> tuple[MediaRef, ...]:
    return await media_refs.gather(
        config,
        deps.settings.state_dir,
        paths=args.images,
        file_uris=args.images_file_uris,
        urls=args.images_url,
        base64_images=args.images_base64,
    )


def _spec(deps: Deps, call: CallProgress, prompt: str, media: MediaRequest) -> RunSpec:
    deps.registry.media().media_ready()  # raises BackendUnavailable with the fix
    return RunSpec(
        tool=call.tool,
        prompt=prompt,
        cwd=deps.settings.project_root,
        model=media.model,
        timeout_seconds=deps.settings.timeout_seconds,
        media=media,
    )


async def _image_job(
    deps: Deps, call: CallProgress, args: ImageOptions, kind: str, prompt: str, **fields: Any
) -> Reply:
    config = MediaConfig.from_settings(deps.settings)
    media = MediaRequest(
        kind=kind,
        out_dir=str(config.output_dir(args.output_dir)),
        model=args.model or config.image_model,
        references=await _refs(deps, config, args),
        aspect_ratio=args.aspect_ratio,
        image_size=args.image_size,
        file_stem=args.filename,
        chain_retry_ms=config.chain_retry_ms,
        **fields,
    )
    return await run_media(deps, call, _spec(deps, call, prompt, media), _controls(args, args.inline))


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
    return await run_media(deps, call, _spec(deps, call, args.prompt, media), Controls())


async def image_edit(deps: Deps, args: ImageEditInput, call: CallProgress) -> Reply:
    has_refs = any((args.images, args.images_file_uris, args.images_url, args.images_base64))
    return await _image_job(deps, call, args, "edit" if has_refs else "image", args.prompt, count=args.count)


async def image_set(deps: Deps, args: ImageSetInput, call: CallProgress) -> Reply:
    return await _image_job(deps, call, args, "set", args.master_prompt, scenes=tuple(args.scenes))


async def image_interact(deps: Deps, args: ImageInteractInput, call: CallProgress) -> Reply:
    config = MediaConfig.from_settings(deps.settings)
    previous = args.previous_interaction_id
    extra: dict[str, Any] = {}
    out_dir = config.output_dir(args.output_dir)
    if previous is None and args.continue_last:
        previous = _LAST_INTERACTION.get(str(out_dir))
        if previous is None:
            previous = deps.registry.media().latest_interaction(out_dir)
            if previous is None:
                raise InputError(
                    "no earlier turn to continue: no interaction sidecar in the output folder", field="continueLast"
                )
            extra = {"continued_from_sidecar": True, "previous_interaction_id": previous}
    media = MediaRequest(
        kind="interact",
        out_dir=str(out_dir),
        model=args.model or config.image_model,
        references=await _refs(deps, config, args),
        aspect_ratio=args.aspect_ratio,
        image_size=args.image_size,
        file_stem=args.filename,
        previous_interaction_id=previous,
        chain_retry_ms=config.chain_retry_ms,
    )
    reply = await run_media(deps, call, _spec(deps, call, args.input, media), _controls(args, args.inline), extra)
    made = (reply.meta or {}).get("interaction_id")
    if isinstance(made, str):
        _LAST_INTERACTION[str(out_dir)] = made
    return reply


async def video(deps: Deps, args: VideoInput, call: CallProgress) -> Reply:
    config = MediaConfig.from_settings(deps.settings)
    media = MediaRequest(
        kind="video",
        out_dir=str(config.output_dir(args.output_dir)),
        model=args.model or config.video_model,
        references=await _refs(deps, config, args),
        aspect_ratio=args.aspect_ratio,
        duration_seconds=args.duration_seconds,
        negative_prompt=args.negative_prompt,
        file_stem=args.filename,
    )
    return await run_media(deps, call, _spec(deps, call, args.prompt, media), _controls(args))


async def music(deps: Deps, args: MusicInput, call: CallProgress) -> Reply:
    config = MediaConfig.from_settings(deps.settings)
    media = MediaRequest(
        kind="music",
        out_dir=str(config.output_dir(args.output_dir)),
        model=args.model or config.music_model,
        references=await _refs(deps, config, args),
        file_stem=args.filename,
    )
    return await run_media(deps, call, _spec(deps, call, args.prompt, media), _controls(args, args.inline))


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
