"""The api backend: one streamed generateContent call per run through google-genai, conversations kept locally.

`run(spec)` yields SessionStarted, RunNotice for options the API cannot honour, one TextDelta per answer chunk,
StreamNotice for an abnormal finish, and a terminal Finished; or raises one typed error (RunFailed, RunTimedOut,
BackendUnavailable, InputError). The whole run, connection included, is bounded by `spec.timeout_seconds`.
This module stays free of the SDK import (see common.py): the modules that need it load on first use.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator
from contextlib import aclosing
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from gemini_relay.backends.api.auth import ApiAuth, resolve_auth
from gemini_relay.backends.api.common import COMMAND, DEFAULT_MODEL, Diagnosis, resolve_model
from gemini_relay.backends.api.conversation_store import (
    CONVERSATION_ID,
    ConversationStore,
    Turn,
    new_conversation_id,
    now_iso,
    validate_conversation_id,
)
from gemini_relay.backends.api.media.output import latest_interaction
from gemini_relay.backends.api.settings import NAME, ApiSettings
from gemini_relay.backends.capabilities import Conversation, ConversationRows, DoctorSection, ModelListing, StoredFile
from gemini_relay.backends.checks import check_spec
from gemini_relay.backends.model_names import GEMINI_ALIASES, served_notice
from gemini_relay.config import Settings
from gemini_relay.core.events import AgentEvent, Finished, RunNotice, SessionStarted, StreamNotice, TextDelta
from gemini_relay.core.spec import RunSpec
from gemini_relay.errors import BackendUnavailable
from gemini_relay.log import logger

if TYPE_CHECKING:
    from gemini_relay.backends.api.generate_config import Request
    from gemini_relay.backends.model_names import Catalog

HELP_TEXT = "\n".join(
    [
        "api backend (Gemini REST API through google-genai; no CLI, no Node):",
        "- Credentials: GEMINI_API_KEY or GOOGLE_API_KEY (GOOGLE_API_KEY wins when both are set); Vertex AI with "
        "GOOGLE_GENAI_USE_VERTEXAI=true, GOOGLE_CLOUD_PROJECT and GOOGLE_CLOUD_LOCATION. GOOGLE_GEMINI_BASE_URL "
        "points it at another endpoint.",
        "- model: an id from gemini-models, or "
        + ", ".join(f"{a} ({t})" for a, t in GEMINI_ALIASES.items())
        + f"; default GEMINI_DEFAULT_MODEL, else {DEFAULT_MODEL}.",
        "- effort low/medium/high: the thinking level (Gemini 3) or thinking budget (Gemini 2.5).",
        "- mode plan: the model is told to answer with a plan only. The API has no tools: it never reads or edits "
        "files, so pass file contents with @ references.",
        "- jsonSchema: sent as the API's native response schema.",
        "- gemini-search: answered with the Google Search grounding tool; sources come from its grounding metadata.",
        "- conversationId: conversations are kept by gemini-relay in its state directory (api-conversations/) and "
        "listed by gemini-conversations.",
        "- agent, sandbox, skipPermissions, addDirs and allowSlashCommands apply to agent CLIs only and are ignored.",
    ]
)


class ApiBackend:
    """`stream=False` sends one generateContent call instead (for gateways that cannot relay SSE)."""

    name = NAME
    command = COMMAND
    max_concurrent: int | None = None

    def __init__(self, settings: Settings, *, stream: bool = True) -> None:
        self._settings = settings
        self.section = ApiSettings.from_env(settings.env)
        self._stream = stream
        self.conversations = ConversationStore(settings.state_dir)

    @property
    def settings(self) -> Settings:
        return self._settings

    def auth(self) -> ApiAuth:
        """The credentials from the settings; BackendUnavailable with the fix when there are none."""
        return resolve_auth(self._settings.env)

    def validate_config(self) -> None:
        """Nothing to check up front: missing credentials are reported by the first call that needs them."""

    def check(self, spec: RunSpec) -> None:
        """Refuse what this backend could never run, before a job exists."""
        check_spec(spec)
        self.check_spec(spec)

    # --- capabilities (backends/capabilities.py) -------------------------------------------------------------

    @property
    def default_model(self) -> str | None:
        return self.section.default_model or DEFAULT_MODEL

    @property
    def search_tool(self) -> str:
        return "the Google Search grounding tool"

    def fresh_conversation_id(self) -> str:
        return new_conversation_id()  # the relay mints the ids of its own conversation store

    async def model_listing(self) -> ModelListing:
        title, default = "api backend (Gemini API through google-genai)", self.section.default_model or DEFAULT_MODEL
        return ModelListing.of_catalog(title, await self.models(), GEMINI_ALIASES, default)

    async def conversation_rows(self, limit: int) -> ConversationRows:
        return ConversationRows("Gemini API", self.list_conversations(limit))

    async def doctor_section(self) -> DoctorSection:
        diagnosis = await self.diagnose()
        problems = [f"{c.name}: {c.detail}" for c in diagnosis.checks if not c.ok]
        return DoctorSection(["## Gemini API (google-genai)", *(f"- {line}" for line in diagnosis.lines())], problems)

    async def help_text(self) -> str:
        return self.help()

    def media_ready(self) -> None:
        self.auth()

    def latest_interaction(self, folder: Path) -> str | None:
        return latest_interaction(folder)

    async def list_files(self, limit: int) -> list[StoredFile]:
        from gemini_relay.backends.api.media import files_api as files  # noqa: PLC0415 - loads the SDK

        return await files.list_files(self.auth(), limit)

    async def upload_file(self, source: Path | BinaryIO, mime_type: str, display_name: str | None = None) -> StoredFile:
        from gemini_relay.backends.api.media import files_api as files  # noqa: PLC0415 - loads the SDK

        return await files.upload(self.auth(), source, mime_type, display_name)

    async def delete_file(self, name: str) -> None:
        from gemini_relay.backends.api.media import files_api as files  # noqa: PLC0415 - loads the SDK

        await files.delete(self.auth(), name)

    def can_count_tokens(self) -> bool:
        try:
            self.auth()
        except BackendUnavailable:
            return False
        return True

    async def count_tokens(self, text: str, model: str | None) -> int:
        from gemini_relay.backends.api.count_tokens import count_tokens  # noqa: PLC0415 - loads the SDK

        return await count_tokens(self.auth(), resolve_model(model, self.section.default_model), text)

    def check_spec(self, spec: RunSpec) -> None:
        """InputError for what `run` would refuse (model id, conversation id, unknown conversation), before a job."""
        if spec.media is not None:
            resolve_model(spec.media.model, None)  # a media job always names its model (the tool picks the default)
            return
        resolve_model(spec.model, self.section.default_model)
        if spec.conversation_id is not None:
            self.conversations.turns(validate_conversation_id(spec.conversation_id))

    def request_for(self, spec: RunSpec) -> Request:
        """What `spec` sends: model, generation config and the notices for options the API cannot honour."""
        from gemini_relay.backends.api.generate_config import build_request  # noqa: PLC0415 - loads the SDK

        return build_request(spec, self.section.default_model)

    def list_conversations(self, limit: int) -> list[Conversation]:
        return self.conversations.recent(limit)

    async def models(self) -> Catalog:
        from gemini_relay.backends.api.catalog import fallback_catalog, list_models  # noqa: PLC0415 - loads the SDK

        try:
            auth = self.auth()
        except BackendUnavailable as exc:
            return fallback_catalog(str(exc))
        return await list_models(auth)

    async def diagnose(self) -> Diagnosis:
        from gemini_relay.backends.api.catalog import diagnose  # noqa: PLC0415 - loads the SDK

        return await diagnose(self._settings.env, self.section.default_model)

    def help(self) -> str:
        return HELP_TEXT

    async def run(self, spec: RunSpec) -> AsyncGenerator[AgentEvent, None]:
        if spec.media is not None:
            from gemini_relay.backends.api.media.media_run import run_media  # noqa: PLC0415 - loads the SDK

            async with aclosing(run_media(self.auth(), spec, self._settings.state_dir)) as events:
                async for event in events:
                    yield event
            return
        from gemini_relay.backends.api.exchange import Exchange  # noqa: PLC0415 - loads the SDK

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
        logger.info(
            "gemini-api: model %s, conversation %s, %d earlier turn(s)", request.model, conversation_id, len(history)
        )
        exchange = Exchange(auth, request, timeout=spec.timeout_seconds, stream=self._stream)
        async with aclosing(exchange.pieces(history, spec.prompt, spec.images)) as pieces:
            async for piece in pieces:
                yield TextDelta(piece)
        fold = exchange.fold
        notices, partial = fold.verdict()
        for notice in notices:
            yield StreamNotice(notice)
        fell_back = served_notice("The Gemini API", request.model, [fold.model_version] if fold.model_version else [])
        if fell_back:
            yield RunNotice(fell_back)
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
            status="SUCCESS",
            text=answer,
            usage=fold.usage,
            num_turns=turns if turns is not None else len(history) + 1,
            structured_output=structured,
            has_structured_output=has_structured,
            session_id=conversation_id,
            partial=partial,
            models=(fold.model_version,) if fold.model_version else (),
        )

    def _save(self, conversation_id: str, spec: RunSpec, answer: str, model: str) -> int | None:
        """Append the completed turn; the conversation's turn count, or None when the store could not be written."""
        try:
            return self.conversations.append(conversation_id, Turn(spec.prompt, answer, model, now_iso()), cwd=spec.cwd)
        except OSError as exc:
            logger.warning("gemini-api: could not save conversation %s: %s", conversation_id, exc)
            return None


def build_api_backend(settings: Settings) -> ApiBackend:
    """All the wiring needs: the backend for GEMINI_MCP_BACKEND=api."""
    return ApiBackend(settings)
