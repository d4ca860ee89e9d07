"""One media generation as a backend run: progress as TextDelta, the written files and a summary in Finished.

`structured_output` carries what a tool reports beside the files (interaction id, chain recovery, the model's
words), so it crosses the job store with the result.
"""

from __future__ import annotations

import os
from collections.abc import AsyncGenerator
from contextlib import aclosing
from pathlib import Path
from typing import Any

import anyio

from gemini_relay.backends.api.auth import ApiAuth
from gemini_relay.backends.api.media import images, interactions
from gemini_relay.backends.api.media import video_generation as video
from gemini_relay.backends.api.media.errors import MediaApiError, from_media_error
from gemini_relay.backends.api.media.output import sidecar_for, write_media, write_sidecar
from gemini_relay.backends.api.media.refs import Resolved, UploadCache, resolve
from gemini_relay.backends.api.media.rest import Rest
from gemini_relay.core.events import AgentEvent, Finished, SessionStarted, TextDelta, Usage
from gemini_relay.core.spec import MediaRequest, RunSpec
from gemini_relay.errors import RunFailed

CHAIN_BACKOFF_START = 0.5


def _add(a: Usage, b: Usage) -> Usage:
    return Usage(
        a.input_tokens + b.input_tokens,
        a.output_tokens + b.output_tokens,
        a.thinking_tokens + b.thinking_tokens,
        0,
        a.total_tokens + b.total_tokens,
    )


def _request_timeout(spec: RunSpec, media: MediaRequest) -> float:
    """Seconds each REST request may take: the call's timeoutMs / GEMINI_TIMEOUT_MS, else the run's, capped."""
    return media.timeout_ms / 1000 if media.timeout_ms is not None else min(spec.timeout_seconds, 600.0)


async def run_media(auth: ApiAuth, spec: RunSpec, state_dir: Path) -> AsyncGenerator[AgentEvent, None]:
    media = spec.media
    assert media is not None and media.model is not None
    out_dir = Path(media.out_dir)
    refs: list[Resolved] = []
    if media.references:
        yield TextDelta(f"Preparing {len(media.references)} reference(s)…\n")
        refs = await resolve(auth, media.references, UploadCache(state_dir))
    info: dict[str, Any] = {"model": media.model, "kind": media.kind}
    files: list[str] = []
    usage = Usage()
    stem = media.file_stem or spec.prompt
    if media.kind in ("image", "edit", "set"):
        prompts = [spec.prompt] if media.kind != "set" else [spec.prompt, *media.scenes]
        count = media.count if media.kind != "set" else 1
        master: Resolved | None = None
        texts: list[str] = []
        for index, prompt in enumerate(prompts):
            scene_refs = [*refs, master] if master is not None else refs  # every scene sees the master
            for n in range(count):
                label = "master" if media.kind == "set" and index == 0 else f"image {index * count + n + 1}"
                yield TextDelta(f"Generating {label} with {media.model}…\n")
                answer = await images.generate(
                    auth,
                    media.model,
                    prompt,
                    scene_refs,
                    aspect_ratio=media.aspect_ratio,
                    size=media.image_size,
                    timeout_ms=media.timeout_ms,
                )
                usage = _add(usage, answer.usage)
                data, mime = answer.images[0]
                single = media.target_name if len(prompts) * count == 1 else None
                path = write_media(out_dir, stem if index == 0 else f"{stem}-scene-{index}", data, mime, single)
                files.append(str(path))
                texts += [answer.text] if answer.text else []
                yield TextDelta(f"Wrote {path}\n")
                if media.kind == "set" and index == 0:
                    master = Resolved(mime, data=data)
        info["text"] = "\n".join(texts)
    elif media.kind == "interact":
        async with aclosing(_interact(auth, spec, media, refs, out_dir, info, files)) as events:
            async for event in events:
                yield event
        usage = info.pop("_usage")
    elif media.kind in ("video", "music"):
        rest = Rest(auth, timeout=_request_timeout(spec, media))
        try:
            yield TextDelta(f"Generating {media.kind} with {media.model} (this can take minutes)…\n")
            if media.kind == "video":
                data = await video.generate(
                    rest,
                    media.model,
                    spec.prompt,
                    refs,
                    aspect_ratio=media.aspect_ratio,
                    duration=media.duration_seconds,
                    negative=media.negative_prompt,
                )
                mime = "video/mp4"
            else:
                body = interactions.body_for(media.model, spec.prompt, refs, previous=None, response_format=None)
                music = await _create(rest, body, "music", refs)
                usage = music.usage
                out = next((o for o in music.outputs if o.mime_type.startswith("audio/")), None)
                if out is None:
                    raise RunFailed("gemini-api: the music interaction ended without audio")
                data = out.data if out.data is not None else await rest.download(str(out.uri))
                mime, info["text"] = out.mime_type, music.text
        finally:
            await rest.aclose()
        path = write_media(out_dir, stem, data, mime)
        files.append(str(path))
        yield TextDelta(f"Wrote {path}\n")
    else:
        raise RunFailed(f"unknown media kind {media.kind!r}")
    yield Finished(
        ok=True,
        status="SUCCESS",
        text=f"Wrote {len(files)} file(s).",
        usage=usage,
        files=tuple(files),
        structured_output=info,
        has_structured_output=True,
        session_id=info.get("interaction_id"),
    )


async def _create(rest: Rest, body: dict[str, Any], what: str, refs: list[Resolved]) -> interactions.InteractionAnswer:
    uris = [r.name for r in refs if r.name]
    try:
        return await interactions.create(rest, body, what=what, file_uris=uris)
    except MediaApiError as exc:
        raise from_media_error(exc, model=str(body.get("model")), file_uris=uris) from exc


async def _interact(
    auth: ApiAuth,
    spec: RunSpec,
    media: MediaRequest,
    refs: list[Resolved],
    out_dir: Path,
    info: dict[str, Any],
    files: list[str],
) -> AsyncGenerator[AgentEvent, None]:
    """One turn; a chained 404 is waited out (store lag), then re-anchored on the dead id's sidecar image."""
    assert media.model is not None
    fmt: dict[str, Any] = {"type": "image"}
    if media.aspect_ratio:
        fmt["aspect_ratio"] = media.aspect_ratio
    if media.image_size:
        fmt["image_size"] = media.image_size
    previous = media.previous_interaction_id
    uris = [r.name for r in refs if r.name]
    rest = Rest(auth, timeout=_request_timeout(spec, media))
    try:
        body = interactions.body_for(
            media.model, spec.prompt, refs, previous=previous, response_format=fmt, thinking_level=media.thinking_level
        )
        yield TextDelta(f"Interaction turn with {media.model}{' chained on ' + previous if previous else ''}…\n")
        answer: interactions.InteractionAnswer | None = None
        deadline = anyio.current_time() + media.chain_retry_ms / 1000
        delay = CHAIN_BACKOFF_START
        while answer is None:
            try:
                answer = await interactions.create(rest, body, what="image", file_uris=uris)
            except MediaApiError as exc:
                if not previous or anyio.current_time() + delay > deadline:
                    if not previous:
                        raise from_media_error(exc, model=media.model, file_uris=uris) from exc
                    answer = await _reanchor(rest, media, spec.prompt, refs, fmt, out_dir, exc, info)
                    break
                yield TextDelta(f"The chained interaction is not visible yet (store lag); retrying in {delay:.1f}s\n")
                await anyio.sleep(delay)
                delay = min(delay * 2, 15.0)
        info["interaction_id"] = answer.interaction_id
        info["text"] = answer.text
        info["_usage"] = answer.usage
        yield SessionStarted(answer.interaction_id, media.model)
        for n, out in enumerate(o for o in answer.outputs if o.mime_type.startswith("image/")):
            data = out.data if out.data is not None else await rest.download(str(out.uri))
            path = write_media(
                out_dir, media.file_stem or spec.prompt if n == 0 else f"{spec.prompt}-{n}", data, out.mime_type
            )
            write_sidecar(
                path,
                {
                    "interaction_id": answer.interaction_id,
                    "previous_interaction_id": previous,
                    "model": media.model,
                    "prompt": spec.prompt,
                    "image": str(path),
                },
            )
            files.append(str(path))
            yield TextDelta(f"Wrote {path}\n")
        if not files:
            raise RunFailed(
                f"gemini-api: interaction {answer.interaction_id} answered without an image. {answer.text[:300]}"
            )
    finally:
        await rest.aclose()


async def _reanchor(
    rest: Rest,
    media: MediaRequest,
    prompt: str,
    refs: list[Resolved],
    fmt: dict[str, Any],
    out_dir: Path,
    first: MediaApiError,
    info: dict[str, Any],
) -> interactions.InteractionAnswer:
    """The chain stayed 404 past the retry window: re-issue unchained on the image that id produced."""
    assert media.model is not None and media.previous_interaction_id is not None
    dead = media.previous_interaction_id
    upstream = first.message
    found = sidecar_for(out_dir, dead)
    if found is None:  # re-anchoring on the wrong picture would silently corrupt the edit
        raise RunFailed(
            f"gemini-api failed: HTTP 404 on previous_interaction_id {dead}: {upstream} (no sidecar in {out_dir} "
            "records that id, so the turn was not re-anchored)",
            http_status=404,
            recovery="Pass the image you want to edit as a reference (images) and drop previous_interaction_id.",
        )
    sidecar, record = found
    image = Path(os.path.realpath(str(record.get("image") or sidecar.with_suffix(""))))
    if image.parent != Path(os.path.realpath(sidecar.parent)):  # a sidecar is data: it must not pick what is sent
        raise RunFailed(
            f"gemini-api failed: HTTP 404 on previous_interaction_id {dead}: {upstream} (its sidecar {sidecar} names "
            f"{image}, outside the folder of its sidecar, so the turn was not re-anchored)",
            http_status=404,
        )
    anchor = Resolved("image/png", data=image.read_bytes()) if image.is_file() else None
    if anchor is None:
        raise RunFailed(
            f"gemini-api failed: HTTP 404 on previous_interaction_id {dead}: {upstream} (its image "
            f"{image} is gone, so the turn could not be re-anchored)",
            http_status=404,
        )
    body = interactions.body_for(
        media.model, prompt, [*refs, anchor], previous=None, response_format=fmt, thinking_level=media.thinking_level
    )
    try:
        answer = await interactions.create(rest, body, what="image", file_uris=[r.name for r in refs if r.name])
    except MediaApiError as exc:
        raise RunFailed(
            f"gemini-api failed: HTTP 404 again without the chain: {exc.message}. The interaction id {dead} was never "
            "the cause.",
            http_status=exc.code,
            recovery=f"Check the model id ({media.model}) with gemini-media-models and any files/… uri you passed "
            "(uploads expire after ~48 h).",
        ) from exc
    info["chain_recovered"] = {"expired_interaction_id": dead, "reanchored_on": str(image)}
    return answer
