"""The conformance fixture tools as the server calls them (GEMINI_MCP_TEST_TOOLS=conformance): each call gets its
Channel; a question in 2026-07-28 ends the round `input_required`; a capability the client did not declare is -32021;
a fixture's failure is an `isError` result, like any tool's."""

from __future__ import annotations

from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext

from gemini_relay.server.channel import CallChannel, input_required_result, missing_capability_error
from gemini_relay.tools.common.channel import InputRequired, MissingCapability
from gemini_relay.tools.conformance.tools import FIXTURES, Fixture, FixtureError


class FixtureTools:
    def __init__(self) -> None:
        self.by_name = {fixture.name: fixture for fixture in FIXTURES}

    def entries(self) -> list[types.Tool]:
        return [fixture.entry() for fixture in FIXTURES]

    def get(self, name: str) -> Fixture | None:
        return self.by_name.get(name)

    async def call(
        self, fixture: Fixture, ctx: ServerRequestContext[Any], arguments: dict[str, Any]
    ) -> types.CallToolResult | types.InputRequiredResult:
        channel = CallChannel(ctx)
        try:
            for capability in fixture.requires:
                channel.require(capability)
            return await fixture.handler(arguments, channel)
        except InputRequired as exc:
            if not channel.modern:
                return _error(f"{fixture.name} needs input, which a 2025-11-25 session cannot return")
            return input_required_result(exc)
        except MissingCapability as exc:
            if channel.modern:
                raise missing_capability_error(exc) from None
            return _error(f"{exc.capability} not supported: {exc}")
        except FixtureError as exc:
            return _error(str(exc))


def _error(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=message)], is_error=True)
