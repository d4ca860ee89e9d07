"""The api backend: one streamed generateContent call per run through google-genai, conversations kept locally.

`run(spec)` yields SessionStarted, RunNotice for options the API cannot honour, one TextDelta per answer chunk,
StreamNotice for an abnormal finish, and a terminal Finished; or raises one typed error (RunFailed, RunTimedOut,
BackendUnavailable, InputError). The whole run, connection included, is bounded by `spec.timeout_seconds`.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable
from typing import TypeVar

import anyio
from google import genai
from google.genai import errors as genai_errors
from google.genai import types

from gemini_relay.backends.agy_models import Catalog
from gemini_relay.backends.api.answer import AnswerFold
from gemini_relay.backends.api.auth import ApiAuth, resolve_auth
from gemini_relay.backends.api.catalog import HELP_TEXT, Diagnosis, diagnose, fallback_catalog, list_models
from gemini_relay.backends.api.conversations import (
    CONVERSATION_ID,
    ConversationStore,
    Turn,
    history_contents,
    new_conversation_id,
    now_iso,
    validate_conversation_id,
)
from gemini_relay.backends.api.failures import (
    COMMAND,
    TRANSPORT_ERRORS,
    from_api_error,
    from_bad_response,
    from_transport_error,
)
from gemini_relay.backends.api.options import Request, build_request
from gemini_relay.backends.gemini_sessions import Conversation
from gemini_relay.config import Settings
from gemini_relay.core.events import (
    AgentEvent,
    Finished,
    RunNotice,
    SessionStarted,
    StreamNotice,
    TextDelta,
)
from gemini_relay.core.spec import RunSpec
from gemini_relay.core.vocabulary import BackendName
from gemini_relay.errors import BackendUnavailable, RunTimedOut
from gemini_relay.log import logger

T = TypeVar("T")
CLOSE_GRACE = 2.0  # closing the HTTP client never holds up a finished or cancelled run longer than this


class ApiBackend:
    """`stream=False` sends one generateContent call instead (for gateways that cannot relay SSE)."""

    def __init__(self, settings: Settings, *, stream: bool = True) -> None:
        self._settings = settings
        self._stream = stream
        self.conversations = ConversationStore(settings.state_dir)

    @property
    def name(self) -> BackendName:
        return BackendName.API

    @property
    def command(self) -> str:
        return COMMAND

    @property
    def max_concurrent(self) -> int | None:
        return None

    @property
    def settings(self) -> Settings:
        return self._settings

    def auth(self) -> ApiAuth:
        """The credentials from the settings; BackendUnavailable with the fix when there are none."""
        return resolve_auth(self._settings.env)

    def validate_config(self) -> None:
        self.auth()

    def request_for(self, spec: RunSpec) -> Request:
        """What `spec` would send (model id checked: InputError); for the server's checks before a job exists."""
        return build_request(spec, self._settings.default_model)

    def list_conversations(self, limit: int) -> list[Conversation]:
        return self.conversations.recent(limit)

    async def models(self) -> Catalog:
        try:
            auth = self.auth()
        except BackendUnavailable as exc:
            return fallback_catalog(str(exc))
        return await list_models(auth)

    async def diagnose(self) -> Diagnosis:
        return await diagnose(self._settings.env, self._settings.default_model)

    def help(self) -> str:
        return HELP_TEXT

    async def run(self, spec: RunSpec) -> AsyncGenerator[AgentEvent, None]:
        auth = self.auth()
        request = self.request_for(spec)
        if spec.conversation_id is not None:
            conversation_id = validate_conversation_id(spec.conversation_id)
            history = self.conversations.turns(conversation_id)
        else:
            fresh = spec.session_id
            conversation_id = fresh if fresh and CONVERSATION_ID.fullmatch(fresh) else new_conversation_id()
            history = []
        yield SessionStarted(conversation_id, request.model)
        for notice in request.notices:
            yield RunNotice(notice)
        contents = [*history_contents(history), types.Content(role="user", parts=[types.Part(text=spec.prompt)])]
        logger.info(
            "gemini-api: model %s, conversation %s, %d earlier turn(s)", request.model, conversation_id, len(history)
        )
        fold = AnswerFold()
        deadline = anyio.current_time() + spec.timeout_seconds
        client = auth.client()  # one client per run: its connections belong to this run's event loop
        stream: AsyncIterator[types.GenerateContentResponse] | None = None
        try:
            if self._stream:
                stream = await self._bounded(
                    client.aio.models.generate_content_stream(
                        model=request.model, contents=contents, config=request.config
                    ),
                    spec,
                    fold,
                    auth,
                    deadline,
                )
                while True:
                    chunk = await self._bounded(_next(stream), spec, fold, auth, deadline)
                    if chunk is None:
                        break
                    for piece in fold.take(chunk):
                        yield TextDelta(piece)
            else:
                response = await self._bounded(
                    client.aio.models.generate_content(model=request.model, contents=contents, config=request.config),
                    spec,
                    fold,
                    auth,
                    deadline,
                )
                for piece in fold.take(response):
                    yield TextDelta(piece)
        finally:
            await _close(client, stream)
        notices, partial = fold.verdict()
        for notice in notices:
            yield StreamNotice(notice)
        sources = fold.sources_text() if request.search else ""
        if sources:
            yield TextDelta(sources)
        answer = fold.text + sources
        structured: object = None
        has_structured = False
        if request.structured:
            try:
                structured, has_structured = json.loads(fold.text), True
            except ValueError:
                yield RunNotice("jsonSchema: the API's answer is not valid JSON despite the response schema.")
        turns = self._save(conversation_id, spec, answer, request.model)
        if turns is None:
            yield RunNotice(
                "This turn could not be saved, so conversationId will not continue from it (see the server log)."
            )
        yield Finished(
            ok=True,
            status="success",
            text=answer,
            usage=fold.usage,
            num_turns=turns if turns is not None else len(history) + 1,
            structured_output=structured,
            has_structured_output=has_structured,
            session_id=conversation_id,
            partial=partial,
        )

    def _save(self, conversation_id: str, spec: RunSpec, answer: str, model: str) -> int | None:
        """Append the completed turn; the conversation's turn count, or None when the store could not be written."""
        try:
            return self.conversations.append(conversation_id, Turn(spec.prompt, answer, model, now_iso()), cwd=spec.cwd)
        except OSError as exc:
            logger.warning("gemini-api: could not save conversation %s: %s", conversation_id, exc)
            return None

    async def _bounded(self, step: Awaitable[T], spec: RunSpec, fold: AnswerFold, auth: ApiAuth, deadline: float) -> T:
        """Await one SDK step inside the run's deadline, turning SDK and transport errors into RunFailed.

        The deadline wraps each step rather than the generator body: a cancel scope must not span a `yield`.
        """
        with anyio.CancelScope(deadline=deadline):
            try:
                return await step
            except genai_errors.APIError as exc:
                raise from_api_error(exc, partial_text=fold.text) from exc
            except genai_errors.UnknownApiResponseError as exc:
                raise from_bad_response(exc, partial_text=fold.text) from exc
            except TRANSPORT_ERRORS as exc:
                raise from_transport_error(exc, auth.endpoint, partial_text=fold.text) from exc
        raise RunTimedOut(COMMAND, spec.timeout_seconds, partial_text=fold.text)


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


def build_api_backend(settings: Settings) -> ApiBackend:
    """All the wiring needs: the backend for GEMINI_MCP_BACKEND=api."""
    return ApiBackend(settings)
