"""The `review` toolset (GEMINI_RELAY_TOOLSETS=review): diff assessment and review, web search, schema-checked
JSON; all read-only."""

from __future__ import annotations

from gemini_relay.tools.common.definition import AnyTool
from gemini_relay.tools.review import assess, review, search, structured

TOOLS: tuple[AnyTool, ...] = (assess.TOOL, review.TOOL, search.TOOL, structured.TOOL)
