"""The conformance fixture tools as the server calls them (GEMINI_MCP_TEST_TOOLS=conformance): each call gets its
Channel; a question in 2026-07-28 ends the round `input_required`; a capability the client did not declare is -32021;
a fixture's failure is an `isError` result, like any tool's. A task-supporting fixture called by a client that
declared the Tasks extension runs as an MCP task of the relay's TaskService: its questions park the task
`input_required` until tasks/update answers them, then the fixture runs again with the answers (as a retried call
would), and a protocol-level failure ends the task `failed`."""

from __future__ import annotations

from typing import Any

import mcp_types as types
from mcp.server.context import HandlerResult, ServerRequestContext
from mcp.shared.exceptions import MCPError

from gemini_relay.server.channel import CallChannel, input_required_result, missing_capability_error
from gemini_relay.server.tasks.service import TaskFailed, TaskInbox, TaskService
from gemini_relay.server.tasks.wire import MISSING_CLIENT_CAPABILITY, TaskWire, declares_extension, missing_extension
from gemini_relay.tools.common.channel import InputRequired, MissingCapability
from gemini_relay.tools.conformance.tools import FIXTURES, Fixture, FixtureError, FixtureProtocolError


class FixtureTools:
    def __init__(self, tasks: TaskService, wire: TaskWire) -> None:
        self.by_name = {fixture.name: fixture for fixture in FIXTURES}
        self._tasks, self._wire = tasks, wire

    def entries(self) -> list[types.Tool]:
        return [fixture.entry() for fixture in FIXTURES]

    def get(self, name: str) -> Fixture | None:
        return self.by_name.get(name)

    async def call(self, fixture: Fixture, ctx: ServerRequestContext[Any], arguments: dict[str, Any]) -> HandlerResult:
        channel = CallChannel(ctx)
        declared = channel.modern and declares_extension(ctx)
        if channel.modern and fixture.task_support == "required" and not declared:
            raise missing_extension()
        try:
            for capability in fixture.requires:
                channel.require(capability)
            if declared and fixture.task_support and self._tasks.available:
                if fixture.gather is not None:
                    await fixture.gather(arguments, channel)
                return await self._start_task(fixture, channel, arguments)
            return await _outcome(fixture, arguments, channel)
        except InputRequired as exc:
            if not channel.modern:
                return _error(f"{fixture.name} needs input, which a 2025-11-25 session cannot return")
            return input_required_result(exc)
        except MissingCapability as exc:
            if channel.modern:
                raise missing_capability_error(exc) from None
            return _error(f"{exc.capability} not supported: {exc}")
        except FixtureProtocolError as exc:
            raise MCPError(exc.code, str(exc)) from None

    async def _start_task(self, fixture: Fixture, channel: CallChannel, arguments: dict[str, Any]) -> dict[str, Any]:
        async def body(inbox: TaskInbox) -> types.CallToolResult:
            current = channel
            while True:
                try:
                    return await _outcome(fixture, arguments, current)
                except InputRequired as exc:
                    current = current.answered(await inbox.ask(exc.requests))
                except MissingCapability as exc:
                    raise TaskFailed(MISSING_CLIENT_CAPABILITY, str(exc)) from None
                except FixtureProtocolError as exc:
                    raise TaskFailed(exc.code, str(exc)) from None

        entry = await self._tasks.start_detached(fixture.name, arguments, body)
        return self._wire.created(entry, modern=True)


async def _outcome(fixture: Fixture, arguments: dict[str, Any], channel: CallChannel) -> types.CallToolResult:
    try:
        return await fixture.handler(arguments, channel)
    except FixtureError as exc:
        return _error(str(exc))


def _error(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=message)], is_error=True)
