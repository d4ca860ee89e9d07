"""gemini-ping, gemini-help and the test-only gemini-timeout-test. None of them spends tokens."""

from __future__ import annotations

import anyio

from gemini_relay.tools.common.context import Deps, Reply
from gemini_relay.tools.common.inputs import EmptyInput, PingInput, TimeoutTestInput
from gemini_relay.tools.common.progress import CallProgress

_TIMEOUT_TEST_STEP = 5.0


async def ping(deps: Deps, args: PingInput, call: CallProgress) -> Reply:
    return Reply(args.prompt or "Pong!")


async def help_(deps: Deps, args: EmptyInput, call: CallProgress) -> Reply:
    return Reply(await deps.registry.shows_help().help_text())


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
