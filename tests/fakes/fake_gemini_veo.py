"""Veo long-running video operations of the fake Gemini API (see :mod:`tests.fakes.fake_gemini_media`)."""

from __future__ import annotations

import uuid
from typing import Any

from tests.fakes.fake_gemini_media import (
    NOT_FOUND_MESSAGE,
    TINY_MP4,
    MediaRequest,
    MediaResponse,
    MediaState,
    _error,
    _json,
    _marker,
    _texts,
)

__all__ = ["get_operation", "predict_long_running"]


def predict_long_running(state: MediaState, req: MediaRequest, model: str) -> MediaResponse:
    body = req.json()
    blocked = state._blocked("predict_long", model, body)
    if blocked is not None:
        return blocked
    op_id = uuid.uuid4().hex[:12]
    safety = (_marker("\n".join(_texts(body))) or ("", None))[0] == "safety"
    with state._lock:
        state._operations[op_id] = [state.operation_polls, model, safety]
    if not safety:
        state.record_generation("video", model, body)
    return _json("predict_long", {"name": f"models/{model}/operations/{op_id}"})


def get_operation(state: MediaState, req: MediaRequest, op_id: str) -> MediaResponse:
    with state._lock:
        entry = state._operations.get(op_id)
        if entry is not None and entry[0] > 0:
            entry[0] -= 1
            return _json("operation", {"name": f"models/{entry[1]}/operations/{op_id}"})
    if entry is None:
        return _error("operation", 404, "NOT_FOUND", NOT_FOUND_MESSAGE)
    model, safety = entry[1], entry[2]
    video: dict[str, Any]
    if safety:
        video = {"raiMediaFilteredCount": 1, "raiMediaFilteredReasons": ["The prompt was blocked for safety."]}
    else:
        if len(entry) == 3:
            entry.append(state.add_file(TINY_MP4, "video/mp4", "generated video"))
        video = {"generatedSamples": [{"video": {"uri": f"{req.base}/v1beta/files/{entry[3]}:download?alt=media"}}]}
    response = {
        "@type": "type.googleapis.com/google.ai.generativelanguage.v1beta.PredictLongRunningResponse",
        "generateVideoResponse": video,
    }
    return _json("operation", {"name": f"models/{model}/operations/{op_id}", "done": True, "response": response})
