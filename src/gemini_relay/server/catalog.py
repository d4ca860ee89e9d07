"""What the server serves besides tools, from the conformance fixtures (GEMINI_MCP_TEST_TOOLS=conformance): their
prompts (after the relay's own, one per tool), resources and templates, resources/read, subscriptions and
completions. Without the fixtures the relay answers none of these beyond its prompts and empty resource lists, as
before; relay.py asks here only when the fixtures are on."""

from __future__ import annotations

from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError

from gemini_relay.server.channel import CallChannel, input_required_result, missing_capability_error
from gemini_relay.tools.common.channel import InputRequired, MissingCapability
from gemini_relay.tools.conformance import catalog as fixtures


class FixtureCatalog:
    def __init__(self) -> None:
        self._prompts = {prompt.name: prompt for prompt in fixtures.PROMPTS}
        self.subscribed: set[str] = set()

    def prompts(self) -> list[types.Prompt]:
        return [prompt.entry() for prompt in fixtures.PROMPTS]

    def has_prompt(self, name: str) -> bool:
        return name in self._prompts

    async def get_prompt(
        self, ctx: ServerRequestContext[Any], params: types.GetPromptRequestParams
    ) -> types.GetPromptResult | types.InputRequiredResult:
        prompt = self._prompts[params.name]
        arguments = dict(params.arguments or {})
        missing = [name for name, _ in prompt.arguments if not arguments.get(name)]
        if missing:
            raise MCPError(types.INVALID_PARAMS, f"Missing required argument(s) of {prompt.name}: {', '.join(missing)}")
        try:
            messages = await prompt.handler(arguments, CallChannel(ctx))
        except InputRequired as exc:
            return input_required_result(exc)
        except MissingCapability as exc:
            raise missing_capability_error(exc) from None
        return types.GetPromptResult(description=prompt.description, messages=messages)

    async def list_resources(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=list(fixtures.RESOURCES))

    async def list_templates(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(resource_templates=list(fixtures.TEMPLATES))

    async def read(
        self, ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        contents = fixtures.read(params.uri)
        if contents is None:  # SEP-2164: a resource that does not exist is an error naming it, never empty contents
            raise MCPError(types.INVALID_PARAMS, f"Resource not found: {params.uri}", {"uri": params.uri})
        return types.ReadResourceResult(contents=list(contents))

    async def subscribe(
        self, ctx: ServerRequestContext[Any], params: types.SubscribeRequestParams
    ) -> types.EmptyResult:
        self.subscribed.add(str(params.uri))
        return types.EmptyResult()

    async def unsubscribe(
        self, ctx: ServerRequestContext[Any], params: types.UnsubscribeRequestParams
    ) -> types.EmptyResult:
        self.subscribed.discard(str(params.uri))
        return types.EmptyResult()

    async def complete(
        self, ctx: ServerRequestContext[Any], params: types.CompleteRequestParams
    ) -> types.CompleteResult:
        """Values of a fixture prompt's argument (or a template's variable) that start with what was typed."""
        typed = params.argument.value
        known = ("arg1", "arg2", "test", "template") if params.argument.name != "id" else ("1", "123", "42")
        values = [value for value in known if value.startswith(typed)]
        return types.CompleteResult(completion=types.Completion(values=values, total=len(values), has_more=False))

    def register(self, server: Any) -> None:
        server.add_request_handler("resources/list", types.PaginatedRequestParams, self.list_resources)
        server.add_request_handler("resources/templates/list", types.PaginatedRequestParams, self.list_templates)
        server.add_request_handler("resources/read", types.ReadResourceRequestParams, self.read)
        server.add_request_handler("resources/subscribe", types.SubscribeRequestParams, self.subscribe)
        server.add_request_handler("resources/unsubscribe", types.UnsubscribeRequestParams, self.unsubscribe)
        server.add_request_handler("completion/complete", types.CompleteRequestParams, self.complete)
