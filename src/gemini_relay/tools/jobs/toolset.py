"""The `jobs` toolset (GEMINI_RELAY_TOOLSETS=jobs): durable jobs, started at once and collected later; its
gemini-cancel takes the default one's place and gains an optional jobId."""

from __future__ import annotations

from gemini_relay.tools.common.definition import AnyTool
from gemini_relay.tools.jobs import cancel, jobs, run, status, wait

TOOLS: tuple[AnyTool, ...] = (run.TOOL, status.TOOL, wait.TOOL, jobs.TOOL, cancel.TOOL)
