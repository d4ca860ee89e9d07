"""The `review` toolset (GEMINI_RELAY_TOOLSETS=review): diff assessment and review, web search, schema-checked
JSON, a consensus of several models; all read-only."""

from __future__ import annotations

from gemini_relay.tools.common.definition import AnyTool
from gemini_relay.tools.review import assess, consensus, review, search, structured

TOOLS: tuple[AnyTool, ...] = (assess.TOOL, review.TOOL, search.TOOL, structured.TOOL, consensus.TOOL)
