"""A call's way back to the MCP client (the Channel of tools/common/channel.py) over the SDK's request context.

2025-11-25: questions are requests on the session (elicitation/create, sampling/createMessage, roots/list),
related to the call so they ride its stream. 2026-07-28: the server sends no request of its own; a question ends the
round with an `input_required` result (InputRequired, turned into the result by `input_required_result`) and the
retry carries the answers. The `requestState` a round mints is sealed by the SDK's RequestStateBoundary (installed
where `input_required` is served), so `state` is only ever plaintext this server wrote.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Mapping
from typing import Any, NoReturn, cast

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp.shared.message import ServerMessageMetadata

from gemini_relay.log import logger
from gemini_relay.server.tasks.task_wire import MISSING_CLIENT_CAPABILITY, is_modern
from gemini_relay.tools.common.channel import (
    Answer,
    InputRequired,
    MissingCapability,
    answer_of,
    elicit_request,
    roots_request,
    sample_request,
    sampled_text,
)

_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")


class CallChannel:
    def __init__(self, ctx: ServerRequestContext[Any]) -> None:
        self._ctx = ctx
        raw = ctx.params if isinstance(ctx.params, Mapping) else {}
        carried = _carried(raw.get("requestState"))
        responses = raw.get("inputResponses")
        # The answers of earlier rounds ride in the state, so a tool that asks one question at a time sees them all.
        self._responses: dict[str, Any] = dict(carried.get("answers") or {})
        self._responses.update(responses if isinstance(responses, Mapping) else {})
        state = carried.get("state")
        self._state = state if isinstance(state, str) else None

    def answered(self, answers: Mapping[str, Any]) -> CallChannel:
        """This call's channel once the client has answered more of its questions (a task's next round)."""
        later = CallChannel(self._ctx)
        later._responses = {**self._responses, **answers}
        later._state = self._state
        return later

    @property
    def modern(self) -> bool:
        return is_modern(self._ctx)

    @property
    def state(self) -> str | None:
        return self._state

    def supports(self, capability: str) -> bool:
        if self.modern:  # 2026-07-28 declares the client's capabilities per request
            caps = (self._ctx.meta or {}).get(types.CLIENT_CAPABILITIES_META_KEY)
            return isinstance(caps, Mapping) and caps.get(capability) is not None
        client = self._ctx.session.client_capabilities
        return client is not None and getattr(client, capability, None) is not None

    def require(self, capability: str) -> None:
        if not self.supports(capability):
            raise MissingCapability(capability)

    def response(self, key: str) -> dict[str, Any] | None:
        value = self._responses.get(key)
        return dict(value) if isinstance(value, Mapping) else None

    def need(self, requests: Mapping[str, Mapping[str, Any]], state: str | None = None) -> NoReturn:
        raise InputRequired(requests, json.dumps({"state": state, "answers": self._responses}))

    async def ask(self, schema: Mapping[str, Any], message: str, *, key: str = "ask") -> Answer:
        self.require("elicitation")
        if self.modern:
            answer = answer_of(self.response(key))
            if answer is None:
                self.need({key: elicit_request(message, schema)})
            return answer
        result = await self._ctx.session.elicit_form(
            message, cast(types.ElicitRequestedSchema, dict(schema)), related_request_id=self._ctx.request_id
        )
        return Answer(result.action, dict(result.content or {}))

    async def sample(self, prompt: str, *, max_tokens: int = 100, key: str = "sample") -> str:
        self.require("sampling")
        if self.modern:
            response = self.response(key)
            if response is None:
                self.need({key: sample_request(prompt, max_tokens)})
            return sampled_text(response)
        request = types.CreateMessageRequest.model_validate(sample_request(prompt, max_tokens))
        result = await self._ctx.session.send_request(request, types.CreateMessageResult, metadata=self._scoped())
        return sampled_text(result.model_dump(mode="json"))

    async def roots(self, *, key: str = "roots") -> list[str]:
        self.require("roots")
        if self.modern:
            response = self.response(key)
            if response is None or not isinstance(response.get("roots"), list):
                self.need({key: roots_request()})
            return [str(r.get("uri")) for r in response["roots"] if isinstance(r, Mapping)]
        listed = await self._ctx.session.send_request(
            types.ListRootsRequest(), types.ListRootsResult, metadata=self._scoped()
        )
        return [str(root.uri) for root in listed.roots]

    def _scoped(self) -> ServerMessageMetadata:
        # On Streamable HTTP a request with no related id goes to the standalone GET stream, which a client may
        # not have opened yet (or ever): the question would be lost and the call hang. It rides the call's stream.
        return ServerMessageMetadata(related_request_id=self._ctx.request_id)

    async def log(self, level: str, message: str) -> None:
        if level not in _LEVELS:
            raise ValueError(f"unknown log level {level!r} (one of {', '.join(_LEVELS)})")
        with warnings.catch_warnings():
            # The SDK flags logging as deprecated in 2026-07-28; it sends there only what the request opted into.
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            await self._ctx.session.send_log_message(
                cast(types.LoggingLevel, level), message, related_request_id=self._ctx.request_id
            )

    async def progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        if self._ctx.meta is None or self._ctx.meta.get("progress_token") is None:
            return
        try:
            await self._ctx.session.report_progress(progress, total, message)
        except Exception:  # a client that went away must not fail the call
            logger.info("progress notification could not be sent")


def _carried(state: object) -> dict[str, Any]:
    """The plaintext of a verified requestState (the boundary replaced the sealed token); {} on a first round."""
    if not isinstance(state, str):
        return {}
    try:
        data = json.loads(state)
    except ValueError:
        return {}
    return data if isinstance(data, dict) and isinstance(data.get("answers", {}), dict) else {}


def input_required_result(exc: InputRequired) -> types.InputRequiredResult:
    return types.InputRequiredResult.model_validate(
        {"resultType": "input_required", "inputRequests": exc.requests or None, "requestState": exc.state}
    )


def missing_capability_error(exc: MissingCapability) -> MCPError:
    return MCPError(
        MISSING_CLIENT_CAPABILITY,
        "Missing required client capability",
        {"requiredCapabilities": {exc.capability: {}}},
    )
