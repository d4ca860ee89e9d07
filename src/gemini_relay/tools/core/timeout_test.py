"""gemini-timeout-test (test-only, GEMINI_MCP_TEST_TOOLS): hold a call open to exercise progress and timeouts."""

from __future__ import annotations

import anyio
from pydantic import Field

from gemini_relay.core.vocabulary import Effect
from gemini_relay.tools.common.context import Deps, Reply
from gemini_relay.tools.common.definition import Doc, ToolDef
from gemini_relay.tools.common.inputs import ToolInput
from gemini_relay.tools.common.progress import CallProgress

_TIMEOUT_TEST_STEP = 5.0


class TimeoutTestInput(ToolInput):
    duration: float = Field(ge=10, description="How long to hold the call open, in milliseconds (at least 10).")


async def timeout_test(deps: Deps, args: TimeoutTestInput, call: CallProgress) -> Reply:
    seconds = args.duration / 1000.0
    steps = max(1, int(-(-seconds // _TIMEOUT_TEST_STEP)))
    results = [f"Starting timeout test for {args.duration:g}ms ({seconds:g}s)"]
    start = anyio.current_time()
    for i in range(1, steps + 1):
        await anyio.sleep(seconds / steps)
        results.append(f"Step {i}/{steps} completed - Elapsed: {round(anyio.current_time() - start)}s")
        call.output = "\n".join(results)
    elapsed_ms = (anyio.current_time() - start) * 1000
    results += ["", "Timeout test completed successfully!", f"Target duration: {args.duration:g}ms"]
    results.append(f"Actual duration: {elapsed_ms:.0f}ms")
    return Reply("\n".join(results))


DOC = Doc(
    "Test-only: hold a call open for a number of milliseconds to exercise progress and timeout handling. "
    "Registered only when GEMINI_MCP_TEST_TOOLS is set.",
    prompt="Test the keepalive system with a long operation.",
)
TOOL = ToolDef("gemini-timeout-test", TimeoutTestInput, timeout_test, Effect.LOCAL_LIVE, DOC, test_only=True)
