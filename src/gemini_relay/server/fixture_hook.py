"""Where the MCP conformance runner's fixtures come from (GEMINI_MCP_TEST_TOOLS=conformance). They are test code
and not shipped: the module named by GEMINI_RELAY_FIXTURES (in the source tree, `tests.conformance.fixtures`, on
the server's import path) provides them through `relay_fixtures(tasks, wire)`. Without it the server says so once at
start and serves as if the variable asked only for the test tool (gemini-timeout-test), rather than failing."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any, Protocol, cast

import mcp_types as types
from mcp.server.context import HandlerResult, ServerRequestContext

from gemini_relay.config import Settings
from gemini_relay.log import logger
from gemini_relay.server.tasks.task_service import TaskService
from gemini_relay.server.tasks.task_wire import TaskWire

FIXTURES_VARIABLE = "GEMINI_RELAY_FIXTURES"
FACTORY = "relay_fixtures"


class Fixtures(Protocol):
    """The tools, prompts and resources served after the relay's own (their handlers use the relay's channel)."""

    def tools(self) -> list[types.Tool]: ...

    def has_tool(self, name: str) -> bool: ...

    async def call(self, name: str, ctx: ServerRequestContext[Any], arguments: dict[str, Any]) -> HandlerResult: ...

    def prompts(self) -> list[types.Prompt]: ...

    def has_prompt(self, name: str) -> bool: ...

    async def get_prompt(
        self, ctx: ServerRequestContext[Any], params: types.GetPromptRequestParams
    ) -> types.GetPromptResult | types.InputRequiredResult: ...

    def register(self, server: Any) -> None:
        """Add the handlers beyond tools and prompts (resources, subscriptions, completions)."""


def load_fixtures(settings: Settings, tasks: TaskService, wire: TaskWire) -> Fixtures | None:
    """The fixtures when GEMINI_MCP_TEST_TOOLS=conformance asks for them and they can be had; else None (said why)."""
    if not settings.conformance:
        return None
    found = _factory(settings.env.get(FIXTURES_VARIABLE) or "")
    if isinstance(found, str):
        logger.warning(
            "GEMINI_MCP_TEST_TOOLS=conformance: the conformance fixtures are not available: %s. They live in the "
            "source tree's tests/, not in the installed package; serving without them.",
            found,
        )
        return None
    return found(tasks, wire)


def _factory(named: str) -> Callable[[TaskService, TaskWire], Fixtures] | str:
    """The fixtures' factory, or why there is none."""
    name = named.strip()
    if not name:
        return f"{FIXTURES_VARIABLE} names no fixtures module (e.g. tests.conformance.fixtures)"
    try:
        module = importlib.import_module(name)
    except ImportError as exc:  # an installed wheel has no tests/: the usual case outside the source tree
        return f"{FIXTURES_VARIABLE}={name!r} cannot be imported ({exc})"
    factory = getattr(module, FACTORY, None)
    if not callable(factory):
        return f"{FIXTURES_VARIABLE}={name!r} has no {FACTORY}(tasks, wire)"
    return cast("Callable[[TaskService, TaskWire], Fixtures]", factory)
