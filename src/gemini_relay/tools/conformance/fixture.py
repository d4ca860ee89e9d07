"""A conformance fixture tool's declaration and what every fixture shares (its content, its failures)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import mcp_types as types

from gemini_relay.tools.common.channel import Channel

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="  # 1x1 red
WAV = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA="  # a minimal WAV
EMPTY: dict[str, Any] = {"type": "object", "properties": {}}
STEP = 0.05  # the scenarios ask for ~50 ms between notifications, to see several arrive during one call
NAME_FORM = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
CONFIRM_FORM = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
ISSUED = "issued"  # the state a round of the request-state fixtures mints and expects back

Handler = Callable[[dict[str, Any], Channel], Awaitable[types.CallToolResult]]


class FixtureError(Exception):
    """The fixture fails as a tool (an `isError` result with this text)."""


class FixtureProtocolError(Exception):
    """The fixture fails at the protocol level (a JSON-RPC error; a task ends `failed`)."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class Fixture:
    name: str
    description: str
    handler: Handler
    schema: Mapping[str, Any] = field(default_factory=lambda: dict(EMPTY))
    requires: tuple[str, ...] = ()  # client capabilities the call needs (-32021 without them)
    task_support: Literal["optional", "required"] | None = (
        None  # "optional" / "required": may (must) run as an MCP task
    )
    # Asked before a task is created (its answers come in input_required rounds): the task then runs with them.
    gather: Callable[[dict[str, Any], Channel], Awaitable[object]] | None = None

    def entry(self) -> types.Tool:
        execution = types.ToolExecution(task_support=self.task_support) if self.task_support else None
        return types.Tool(
            name=self.name, description=self.description, input_schema=dict(self.schema), execution=execution
        )


def text(value: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=value)])


def image() -> types.ImageContent:
    return types.ImageContent(type="image", data=PNG, mime_type="image/png")
