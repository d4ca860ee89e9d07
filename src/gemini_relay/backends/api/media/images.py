"""Images through generateContent with the IMAGE response modality (Nano Banana models), via google-genai."""

from __future__ import annotations

from dataclasses import dataclass, field

import anyio
from google.genai import errors as genai_errors
from google.genai import types

from gemini_relay.backends.api.auth import ApiAuth
from gemini_relay.backends.api.media.errors import MediaApiError, from_media_error, safety_block
from gemini_relay.backends.api.media.refs import Resolved
from gemini_relay.core.events import Usage
from gemini_relay.errors import RunFailed

_BLOCKS = frozenset({"SAFETY", "IMAGE_SAFETY", "PROHIBITED_CONTENT", "BLOCKLIST", "SPII", "IMAGE_PROHIBITED_CONTENT"})


@dataclass
class ImageAnswer:
    images: list[tuple[bytes, str]] = field(default_factory=list[tuple[bytes, str]])
    text: str = ""
    usage: Usage = field(default_factory=Usage)


def _part(ref: Resolved) -> types.Part:
    if ref.data is not None:
        return types.Part(inline_data=types.Blob(data=ref.data, mime_type=ref.mime_type))
    return types.Part(file_data=types.FileData(file_uri=ref.uri, mime_type=ref.mime_type))


async def generate(
    auth: ApiAuth,
    model: str,
    prompt: str,
    refs: list[Resolved],
    *,
    aspect_ratio: str | None,
    size: str | None,
    timeout_ms: int | None = None,
) -> ImageAnswer:
    """One generateContent call; RunFailed with the safety, quota-wall or expired-file message when it fails, or
    when no answer came within `timeout_ms` (the whole request, whatever HTTP stack the SDK picked)."""
    config = types.GenerateContentConfig(
        response_modalities=["TEXT", "IMAGE"],
        image_config=types.ImageConfig(aspect_ratio=aspect_ratio, image_size=size) if aspect_ratio or size else None,
    )
    contents = [types.Content(role="user", parts=[*(_part(r) for r in refs), types.Part(text=prompt)])]
    client = auth.client()
    try:
        with anyio.fail_after(timeout_ms / 1000 if timeout_ms is not None else None):
            response = await client.aio.models.generate_content(model=model, contents=contents, config=config)
    except TimeoutError:
        raise RunFailed(
            f"gemini-api: {model} did not answer within {timeout_ms} ms (timeoutMs, GEMINI_TIMEOUT_MS); nothing was "
            "written. A 4K or Pro image can take longer: raise timeoutMs."
        ) from None
    except genai_errors.APIError as exc:
        code = int(exc.code) if isinstance(exc.code, int) else 0
        error = MediaApiError(code, str(exc.status or ""), str(exc.message or exc))
        raise from_media_error(error, model=model, file_uris=[r.name for r in refs if r.name]) from exc
    finally:
        await client.aio.aclose()
    return _read(response)


def _read(response: types.GenerateContentResponse) -> ImageAnswer:
    answer = ImageAnswer()
    feedback = response.prompt_feedback
    if feedback is not None and feedback.block_reason is not None:
        raise safety_block("prompt", f"blockReason {_name(feedback.block_reason)}")
    candidate = response.candidates[0] if response.candidates else None
    texts: list[str] = []
    for part in (candidate.content.parts or []) if candidate and candidate.content else []:
        if part.inline_data is not None and part.inline_data.data:
            answer.images.append((part.inline_data.data, part.inline_data.mime_type or "image/png"))
        elif part.text and not part.thought:
            texts.append(part.text)
    answer.text = "".join(texts).strip()
    reason = _name(candidate.finish_reason) if candidate and candidate.finish_reason else ""
    if not answer.images:
        if reason in _BLOCKS:
            detail = reason + (f": {candidate.finish_message}" if candidate and candidate.finish_message else "")
            raise safety_block("image", detail)
        said = f" It said: {answer.text[:300]}" if answer.text else ""
        raise RunFailed(f"gemini-api: the model answered without an image (finishReason {reason or 'none'}).{said}")
    meta = response.usage_metadata
    if meta is not None:
        answer.usage = Usage(
            input_tokens=meta.prompt_token_count or 0,
            output_tokens=(meta.candidates_token_count or 0) + (meta.thoughts_token_count or 0),
            thinking_tokens=meta.thoughts_token_count or 0,
            total_tokens=meta.total_token_count or 0,
        )
    return answer


def _name(value: object) -> str:
    return str(getattr(value, "value", value))
