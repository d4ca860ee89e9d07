"""The media toolset's in-process tools: gemini-files (Files API), gemini-media-models and gemini-usage."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from gemini_relay.content.rate_card import Usage as CostUsage
from gemini_relay.content.rate_card import estimate_cost, load_rate_card
from gemini_relay.core.vocabulary import RunState
from gemini_relay.errors import InputError
from gemini_relay.tools import media_refs
from gemini_relay.tools.context import Deps, Reply
from gemini_relay.tools.media import media_models_text
from gemini_relay.tools.media_config import MediaConfig
from gemini_relay.tools.media_schemas import FilesInput, UsageInput
from gemini_relay.tools.progress import CallProgress
from gemini_relay.tools.schemas import EmptyInput

DEFAULT_VIDEO_SECONDS = 8  # Veo's default clip length, when the call did not name one


def _json(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False)


async def files(deps: Deps, args: FilesInput, call: CallProgress) -> Reply:
    maker = deps.registry.media()
    maker.media_ready()  # no credentials: say how to set them before anything else
    if args.action == "list":
        found = await maker.list_files(args.limit)
        rows = [
            {
                "name": f.name,
                "uri": f.uri,
                "mime_type": f.mime_type,
                "size_bytes": f.size_bytes,
                "expires": f.expires,
                "display_name": f.display_name,
            }
            for f in found
        ]
        return Reply(_json({"files": rows, "count": len(rows)}))
    if args.action == "delete":
        if not args.name:
            raise InputError("delete needs the files/<id> to delete", field="name")
        if not args.confirm:
            raise InputError(f"deleting {args.name} cannot be undone: pass confirm: true to delete it", field="confirm")
        name = media_refs.file_uri_ref(args.name, "name").value
        await maker.delete_file(name if name.startswith("files/") else "files/" + name.split("/files/", 1)[1])
        return Reply(f"Deleted {args.name}.")
    sources = [s for s in (args.path, args.url, args.data_base64) if s]
    if len(sources) != 1:
        raise InputError("upload takes exactly one of path, url or dataBase64", field="action")
    config = MediaConfig.from_settings(deps.settings)
    if args.path:
        ref = media_refs.local_ref(args.path, config, "path")
    elif args.url:
        ref = await media_refs.url_ref(args.url, deps.settings.state_dir)
    else:
        ref = media_refs.base64_ref(args.data_base64 or "", deps.settings.state_dir, "dataBase64")
    uploaded = await maker.upload_file(Path(ref.value), ref.mime_type or "application/octet-stream")
    data = {
        "file_uri": uploaded.name,
        "uri": uploaded.uri,
        "mime_type": uploaded.mime_type,
        "size_bytes": uploaded.size_bytes,
        "expires": uploaded.expires,
    }
    return Reply(_json({**data, "next": f'Pass it as imagesFileUris: ["{uploaded.name}"] (kept ~48 h).'}), data)


async def media_models(deps: Deps, args: EmptyInput, call: CallProgress) -> Reply:
    return Reply(media_models_text(MediaConfig.from_settings(deps.settings)))


async def usage(deps: Deps, args: UsageInput, call: CallProgress) -> Reply:
    """Token usage and estimated cost of the generations in the shared job store (every server's, like gemini-jobs:
    with the relay host the host owns every job), each priced against its own model."""
    if deps.jobs is None:
        raise InputError("Usage is read from the job store, and this server runs without one")
    store = deps.jobs.store
    card = load_rate_card(deps.settings.env)
    calls: list[dict[str, Any]] = []
    total, unpriced = 0.0, 0
    for job_id in store.job_ids():
        try:
            meta = store.meta(job_id)
        except InputError:
            continue
        stored = store.result(job_id)
        if stored is None:
            continue
        result = stored.result
        if result.state is not RunState.DONE or result.usage is None:
            continue
        media = meta.spec.media
        model = (media.model if media else None) or result.model or meta.spec.model or "unknown"
        images = sum(1 for f in result.files if f.endswith((".png", ".jpg", ".webp")))
        seconds = float((media.duration_seconds or DEFAULT_VIDEO_SECONDS) if media and media.kind == "video" else 0)
        cost_usage = CostUsage(
            input_tokens=result.usage.input_tokens,
            output_tokens=result.usage.output_tokens,
            images=images,
            video_seconds=seconds,
        )
        estimate = estimate_cost(model, cost_usage, card)
        row: dict[str, Any] = {
            "job_id": job_id,
            "tool": meta.tool,
            "model": model,
            "input_tokens": result.usage.input_tokens,
            "output_tokens": result.usage.output_tokens,
            "estimated_usd": estimate.usd if estimate else None,
        }
        if estimate is None:
            unpriced += 1
        else:
            total += estimate.usd
        calls.append(row)
    data = {
        "calls": calls,
        "input_tokens": sum(c["input_tokens"] for c in calls),
        "output_tokens": sum(c["output_tokens"] for c in calls),
        "estimated_usd": round(total, 6),
        "unpriced_calls": unpriced,
        "rate_card": {"as_of": card.as_of, "source": card.source},
        "note": "An estimate from a dated rate card (GEMINI_RATE_CARD overrides it); the API has no balance to read.",
    }
    return Reply(_json(data), data)
