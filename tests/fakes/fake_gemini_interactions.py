"""The Interactions API of the fake Gemini API (see :mod:`tests.fakes.fake_gemini_media` for the contract)."""

from __future__ import annotations

import base64
import time
import uuid
from typing import Any

from tests.fakes.fake_gemini_media import (
    NOT_FOUND_MESSAGE,
    TINY_MP3,
    TINY_MP4,
    MediaRequest,
    MediaResponse,
    MediaState,
    _error,
    _Interaction,
    _json,
    _marker,
    _stamp,
    _texts,
)

__all__ = ["cancel_interaction", "create_interaction", "get_interaction"]

_USAGE = {"total_input_tokens": 12, "total_output_tokens": 1290, "total_tokens": 1302}


def _output_kind(model: str, response_format: Any) -> str:
    fmt = response_format.get("type") if isinstance(response_format, dict) else None
    if model.startswith("lyria") or fmt == "audio":
        return "music"
    if "omni" in model or model.startswith("veo") or fmt == "video":
        return "video"
    if fmt == "image" or "image" in model:
        return "image"
    return "text"


def _output(state: MediaState, req: MediaRequest, kind: str, body: dict[str, Any], prompt: str) -> dict[str, Any]:
    if kind == "music":
        return {"type": "audio", "mime_type": "audio/mpeg", "data": base64.b64encode(TINY_MP3).decode()}
    if kind == "video":
        fmt = body.get("response_format")
        if isinstance(fmt, dict) and fmt.get("delivery") == "inline":
            return {"type": "video", "mime_type": "video/mp4", "data": base64.b64encode(TINY_MP4).decode()}
        file_id = state.add_file(TINY_MP4, "video/mp4", "generated video")
        return {
            "type": "video",
            "mime_type": "video/mp4",
            "uri": f"{req.base}/v1beta/files/{file_id}:download?alt=media",
        }
    if kind == "image":
        return {"type": "image", "mime_type": "image/png", "data": base64.b64encode(state.image_bytes).decode()}
    return {"type": "text", "text": f"Interaction answer to: {prompt}"}


def _visible(state: MediaState, interaction_id: str) -> _Interaction | None:
    """The stored interaction once the store has caught up; each lookup before that counts toward the lag."""
    with state._lock:
        record = state._interactions.get(interaction_id)
        if record is None:
            return None
        record.lookups += 1
        lagging = record.lookups <= state.store_lag_requests
        if lagging or time.monotonic() - record.created < state.store_lag_seconds:
            return None
        return record


def create_interaction(state: MediaState, req: MediaRequest) -> MediaResponse:
    body = req.json()
    if not isinstance(body, dict) or not isinstance(body.get("model") or body.get("agent"), str):
        return _error("interaction_create", 400, "INVALID_ARGUMENT", "model or agent is required.")
    model = str(body.get("model") or body.get("agent"))
    blocked = state._blocked("interaction_create", model, body)
    if blocked is not None:
        return blocked
    previous = body.get("previous_interaction_id")
    if isinstance(previous, str) and _visible(state, previous) is None:
        return _error("interaction_create", 404, "NOT_FOUND", NOT_FOUND_MESSAGE)
    if state.missing_file_refs(body.get("input")):
        return _error("interaction_create", 404, "NOT_FOUND", NOT_FOUND_MESSAGE)
    kind = _output_kind(model, body.get("response_format"))
    background = body.get("background") is True
    if background and kind == "image":
        return _error("interaction_create", 400, "INVALID_ARGUMENT", "background is not supported for this model.")
    prompt = "\n".join(_texts(body.get("input")))
    marker = (_marker(prompt) or ("", None))[0]
    now = time.time()
    stored: dict[str, Any] = {
        "id": f"v1_{uuid.uuid4().hex[:16]}",
        "model": model,
        "status": "completed",
        "created": _stamp(now),
        "updated": _stamp(now),
        "usage": dict(_USAGE),
    }
    if isinstance(previous, str):
        stored["previous_interaction_id"] = previous
    if marker == "safety":
        stored["status"] = "failed"
        stored["errors"] = [{"code": "IMAGE_SAFETY", "message": "The output was blocked for safety reasons."}]
        stored.pop("usage")
    elif marker == "fail" and background:
        stored["status"] = "failed"
        stored["errors"] = [{"code": "INTERNAL", "message": "The background interaction failed."}]
    else:
        output = _output(state, req, kind, body, prompt)
        stored["steps"] = [{"type": "model_output", "content": [output]}]
        state.record_generation(kind, model, body.get("input"))
    record = _Interaction(stored, time.monotonic(), polls_left=state.background_polls if background else 0)
    with state._lock:
        state._interactions[stored["id"]] = record
    return _json("interaction_create", _snapshot(record))


def _snapshot(record: _Interaction) -> dict[str, Any]:
    """What a poll sees: `in_progress` without outputs while the background work is still going."""
    if record.polls_left > 0:
        keep = ("id", "model", "created", "updated", "previous_interaction_id")
        return {**{k: v for k, v in record.body.items() if k in keep}, "status": "in_progress"}
    return record.body


def get_interaction(
    state: MediaState, req: MediaRequest, interaction_id: str, *, delete: bool = False
) -> MediaResponse:
    kind = "interaction_delete" if delete else "interaction_get"
    record = _visible(state, interaction_id)
    if record is None:
        return _error(kind, 404, "NOT_FOUND", NOT_FOUND_MESSAGE)
    if delete:
        with state._lock:
            state._interactions.pop(interaction_id, None)
        return _json(kind, {})
    answer = _snapshot(record)
    with state._lock:
        record.polls_left = max(record.polls_left - 1, 0)
    return _json(kind, answer)


def cancel_interaction(interaction_id: str) -> MediaResponse:
    return _error("interaction_cancel", 403, "PERMISSION_DENIED", "The caller does not have permission")
