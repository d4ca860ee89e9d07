"""The Interactions API over REST: create one interaction (optionally chained), poll background work, read outputs."""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass, field
from typing import Any

import anyio

from gemini_relay.backends.api.media.errors import MediaApiError, from_media_error, safety_block
from gemini_relay.backends.api.media.refs import Resolved
from gemini_relay.backends.api.media.rest import Rest
from gemini_relay.core.events import Usage
from gemini_relay.errors import RunFailed

POLL_FIRST, POLL_MAX = 0.5, 8.0  # background work takes tens of seconds: a quick first look, then back off
_SAFETY_CODES = ("SAFETY", "IMAGE_SAFETY", "PROHIBITED_CONTENT", "BLOCKLIST")


@dataclass
class Output:
    mime_type: str
    data: bytes | None = None
    uri: str | None = None


@dataclass
class InteractionAnswer:
    interaction_id: str
    outputs: list[Output] = field(default_factory=list[Output])
    text: str = ""
    usage: Usage = field(default_factory=Usage)


def body_for(
    model: str,
    prompt: str,
    refs: list[Resolved],
    *,
    previous: str | None,
    response_format: dict[str, Any] | None,
    thinking_level: str | None = None,
) -> dict[str, Any]:
    body: dict[str, Any] = {"model": model, "input": [{"type": "text", "text": prompt}, *(r.rest_part() for r in refs)]}
    if thinking_level:
        body["generation_config"] = {"thinking_level": thinking_level}
    if previous:
        body["previous_interaction_id"] = previous
    if response_format:
        body["response_format"] = response_format
    return body


async def create(rest: Rest, body: dict[str, Any], *, what: str, file_uris: list[str]) -> InteractionAnswer:
    """One interaction to its end; raises MediaApiError for a 404 (the caller decides what a chained 404 means)."""
    try:
        data = await rest.post("interactions", body)
        poll = POLL_FIRST
        while data.get("status") in ("in_progress", "queued", "pending"):
            await anyio.sleep(poll)
            poll = min(poll * 2, POLL_MAX)
            data = await rest.get(f"interactions/{data['id']}")
    except MediaApiError as exc:
        if exc.code == 404:
            raise
        raise from_media_error(exc, model=str(body.get("model")), file_uris=file_uris) from exc
    return read(data, what)


def read(data: dict[str, Any], what: str) -> InteractionAnswer:
    if data.get("status") == "failed":
        errors = data.get("errors") or [data.get("error") or {}]
        first = errors[0] if errors and isinstance(errors[0], dict) else {}
        code, message = str(first.get("code") or ""), str(first.get("message") or "the interaction failed")
        if any(s in code for s in _SAFETY_CODES):
            raise safety_block(what, f"{code}: {message}")
        raise RunFailed(f"gemini-api: the interaction failed ({code or 'no code'}): {message}")
    answer = InteractionAnswer(str(data.get("id") or ""))
    contents = list(data.get("outputs") or [])
    for step in data.get("steps") or []:
        if isinstance(step, dict) and step.get("type") == "model_output":
            contents += step.get("content") or []
    texts: list[str] = []
    for item in contents:
        if not isinstance(item, dict):
            continue
        if item.get("type") == "text" and isinstance(item.get("text"), str):
            texts.append(item["text"])
        elif isinstance(item.get("data"), str):
            answer.outputs.append(Output(str(item.get("mime_type") or "image/png"), data=_b64(item["data"])))
        elif isinstance(item.get("uri"), str):
            answer.outputs.append(Output(str(item.get("mime_type") or "video/mp4"), uri=item["uri"]))
    answer.text = "".join(texts).strip()
    usage = data.get("usage") or {}
    answer.usage = Usage(
        input_tokens=int(usage.get("total_input_tokens") or 0),
        output_tokens=int(usage.get("total_output_tokens") or 0),
        total_tokens=int(usage.get("total_tokens") or 0),
    )
    return answer


def _b64(text: str) -> bytes:
    """Standard or URL-safe base64 (the API has sent both), padding optional."""
    padded = text + "=" * (-len(text) % 4)
    try:
        return base64.urlsafe_b64decode(padded.replace("+", "-").replace("/", "_"))
    except (binascii.Error, ValueError) as exc:
        raise RunFailed("gemini-api: the API sent media that is not valid base64") from exc
