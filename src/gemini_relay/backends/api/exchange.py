"""One exchange with the API: the request sent, each chunk folded as it arrives, every step inside the deadline.

The deadline wraps each awaited SDK step rather than the generator body, because a cancel scope must not span a
`yield`. SDK and transport exceptions leave as RunFailed (with the partial text so far), a missed deadline as
RunTimedOut.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Sequence
from pathlib import Path
from typing import TypeVar

import anyio
from google import genai
from google.genai import errors as genai_errors
from google.genai import types

from gemini_relay.backends.api.answer import AnswerFold
from gemini_relay.backends.api.auth import ApiAuth
from gemini_relay.backends.api.common import COMMAND
from gemini_relay.backends.api.conversation_store import Turn
from gemini_relay.backends.api.failures import (
    TRANSPORT_ERRORS,
    from_api_error,
    from_bad_response,
    from_transport_error,
)
from gemini_relay.backends.api.generate_config import Request
from gemini_relay.core.spec import MediaRef
from gemini_relay.errors import RunTimedOut

T = TypeVar("T")
CLOSE_GRACE = 2.0  # closing the HTTP client never holds up a finished or cancelled run longer than this


class Exchange:
    def __init__(self, auth: ApiAuth, request: Request, *, timeout: float, stream: bool) -> None:
        self.auth = auth
        self.request = request
        self.timeout = timeout
        self.stream = stream
        self.fold = AnswerFold()
        self._deadline = anyio.current_time() + timeout

    async def pieces(
        self, history: Sequence[Turn], prompt: str, images: Sequence[MediaRef] = ()
    ) -> AsyncGenerator[str, None]:
        """The answer's text pieces in arrival order; `fold` holds everything else once this is exhausted."""
        parts = [types.Part(text=prompt), *image_parts(images)]
        contents = [*history_contents(history), types.Content(role="user", parts=parts)]
        model, config = self.request.model, self.request.config
        client = self.auth.client()  # one client per run: its connections belong to this run's event loop
        stream: AsyncIterator[types.GenerateContentResponse] | None = None
        try:
            if self.stream:
                stream = await self._bounded(
                    client.aio.models.generate_content_stream(model=model, contents=contents, config=config)
                )
                while (chunk := await self._bounded(_next(stream))) is not None:
                    for piece in self.fold.take(chunk):
                        yield piece
            else:
                response = await self._bounded(
                    client.aio.models.generate_content(model=model, contents=contents, config=config)
                )
                for piece in self.fold.take(response):
                    yield piece
        finally:
            await _close(client, stream)

    async def _bounded(self, step: Awaitable[T]) -> T:
        partial = self.fold.text
        with anyio.CancelScope(deadline=self._deadline):
            try:
                return await step
            except genai_errors.APIError as exc:
                raise from_api_error(exc, partial_text=partial) from exc
            except genai_errors.UnknownApiResponseError as exc:
                raise from_bad_response(exc, partial_text=partial) from exc
            except TRANSPORT_ERRORS as exc:
                raise from_transport_error(exc, self.auth.endpoint, partial_text=partial) from exc
        raise RunTimedOut(COMMAND, self.timeout, partial_text=partial)


def image_parts(images: Sequence[MediaRef]) -> list[types.Part]:
    """Local images inline (the tool jailed and size-checked them), Files API uris by reference."""
    parts: list[types.Part] = []
    for ref in images:
        if ref.kind == "file_uri":
            parts.append(types.Part(file_data=types.FileData(file_uri=ref.value, mime_type=ref.mime_type)))
        else:
            data = Path(ref.value).read_bytes()
            parts.append(types.Part.from_bytes(data=data, mime_type=ref.mime_type or "image/png"))
    return parts


def history_contents(turns: Sequence[Turn]) -> list[types.Content]:
    """The stored turns as the alternating user/model contents the stateless API needs to continue."""
    contents: list[types.Content] = []
    for turn in turns:
        contents.append(types.Content(role="user", parts=[types.Part(text=turn.prompt)]))
        contents.append(types.Content(role="model", parts=[types.Part(text=turn.answer)]))
    return contents


async def _next(stream: AsyncIterator[types.GenerateContentResponse]) -> types.GenerateContentResponse | None:
    try:
        return await anext(stream)
    except StopAsyncIteration:
        return None


async def _close(client: genai.Client, stream: AsyncIterator[types.GenerateContentResponse] | None) -> None:
    with anyio.move_on_after(CLOSE_GRACE, shield=True):
        closer = getattr(stream, "aclose", None)
        if closer is not None:
            with contextlib.suppress(Exception):
                await closer()
        with contextlib.suppress(Exception):
            await client.aio.aclose()
    with contextlib.suppress(Exception):
        client.close()
