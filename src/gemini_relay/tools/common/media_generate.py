"""What the generation tools (core's gemini-image, the media toolset's) share: the API key check, the job controls, the
reference images, the RunSpec of a generation and the image job. Every generation is a job on the api backend
(media_jobs.py)."""

from __future__ import annotations

from typing import Any

from gemini_relay.core.spec import MediaRef, MediaRequest, RunSpec
from gemini_relay.errors import BackendUnavailable
from gemini_relay.tools.common import media_refs
from gemini_relay.tools.common.context import Deps, Reply
from gemini_relay.tools.common.media_config import MediaConfig
from gemini_relay.tools.common.media_inputs import ImageOptions, JobControls, ReferencesInput
from gemini_relay.tools.common.media_jobs import Controls, run_media
from gemini_relay.tools.common.progress import CallProgress

# The end of every generation tool's description.
AS_A_JOB = (
    " Runs as a durable job: async answers with a jobId, maxWaitMs hands one back after a budget, idempotencyKey "
    "returns the recorded result instead of billing again. Answers with the absolute path, a file:/// link and a "
    "resource_link."
)


def media_ready(deps: Deps) -> bool:
    """Whether a backend can generate media now (the Gemini API with a key)."""
    try:
        deps.registry.media().media_ready()
    except BackendUnavailable:
        return False
    return True


def controls(args: JobControls, inline: bool = False) -> Controls:
    return Controls(args.async_, args.max_wait_ms, args.idempotency_key, inline)


async def references(deps: Deps, config: MediaConfig, args: ReferencesInput) -> tuple[MediaRef, ...]:
    return await media_refs.gather(
        config,
        deps.settings.state_dir,
        paths=args.images,
        file_uris=args.images_file_uris,
        urls=args.images_url,
        base64_images=args.images_base64,
    )


def media_spec(deps: Deps, call: CallProgress, prompt: str, media: MediaRequest) -> RunSpec:
    deps.registry.media().media_ready()  # raises BackendUnavailable with the fix
    return RunSpec(
        tool=call.tool,
        prompt=prompt,
        cwd=deps.settings.project_root,
        model=media.model,
        timeout_seconds=deps.settings.timeout_seconds,
        media=media,
    )


async def media_job(
    deps: Deps,
    call: CallProgress,
    args: ReferencesInput,
    prompt: str,
    kind: str,
    *,
    model: str | None,
    inline: bool = False,
    **fields: Any,
) -> Reply:
    """A generation of `kind` run as a job: the call's output folder, file name, references and request bound, its
    `model` (else the configured one for the kind), and `fields`, what the kind takes besides."""
    config = MediaConfig.from_settings(deps.settings)
    image = kind not in ("video", "music")
    if image:
        fields["chain_retry_ms"] = config.chain_retry_ms
    media = MediaRequest(
        kind=kind,
        out_dir=str(config.output_dir(args.output_dir)),
        model=model or config.model_for(kind),
        references=await references(deps, config, args),
        file_stem=args.filename,
        timeout_ms=config.request_timeout_ms(args.timeout_ms, fields.get("image_size"), image=image),
        **fields,
    )
    return await run_media(deps, call, media_spec(deps, call, prompt, media), controls(args, inline))


async def image_job(deps: Deps, call: CallProgress, args: ImageOptions, kind: str, prompt: str, **fields: Any) -> Reply:
    return await media_job(
        deps,
        call,
        args,
        prompt,
        kind,
        model=args.model,
        inline=args.inline,
        aspect_ratio=args.aspect_ratio,
        image_size=args.image_size,
        **fields,
    )
