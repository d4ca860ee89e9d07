"""The default tools, registered whatever GEMINI_RELAY_TOOLSETS says, in the registry order of gemini-relay 1.2.0
(clients and agents rely on it); the test-only tools come last, and only with GEMINI_MCP_TEST_TOOLS."""

from __future__ import annotations

from gemini_relay.tools.common.definition import AnyTool
from gemini_relay.tools.core import (
    ask,
    brainstorm,
    cancel,
    conversations,
    doctor,
    fetch_chunk,
    help,
    image,
    models,
    ping,
    plan,
    timeout_test,
)

TOOLS: tuple[AnyTool, ...] = (
    ask.TOOL,
    plan.TOOL,
    image.TOOL,
    models.TOOL,
    doctor.TOOL,
    brainstorm.TOOL,
    fetch_chunk.TOOL,
    conversations.TOOL,
    cancel.TOOL,
    ping.TOOL,
    help.TOOL,
    timeout_test.TOOL,
)
