"""Progress notifications in memory: 0 at the start, numbered keepalives carrying the latest output while the run
is open, 100 at the end — and none at all for a call without a progress token."""

from __future__ import annotations

import anyio
import mcp_types as types
import pytest
from mcp.client.session import IncomingMessage

from gemini_relay.errors import RunFailed
from tests.inmemory.conftest import InMemory, text_of
from tests.inmemory.scripted import Script

pytestmark = pytest.mark.anyio
Seen = list[tuple[float, float | None, str | None]]


async def test_a_call_gets_start_keepalives_with_output_and_a_final_notification(relay: InMemory) -> None:
    seen: Seen = []
    release = anyio.Event()

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))
        if 0 < progress < 100 and message is not None and "📝 Output: ..." in message:
            release.set()  # the run may finish once a keepalive showed its output

    relay.backend.queue(Script(deltas=("partial thoughts",), hold=release))
    async with relay.client(GEMINI_RELAY_PROGRESS_INTERVAL="0.05") as client:
        result = await client.call_tool("gemini-ask", {"prompt": "think"}, progress_callback=on_progress)
    assert not result.is_error, (text_of(result), seen)
    assert seen[0] == (0, None, "🔍 Starting gemini-ask")
    assert seen[-1] == (100, 100, "✅ gemini-ask completed successfully")
    keepalives = seen[1:-1]
    assert [p for p, _, _ in keepalives] == list(range(1, len(keepalives) + 1))
    assert all(total is None for _, total, _ in keepalives)
    assert any(m is not None and m.endswith("📝 Output: ...partial thoughts") for _, _, m in keepalives), keepalives


async def test_a_failed_call_ends_with_the_failure_notification(relay: InMemory) -> None:
    seen: Seen = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    async with relay.client() as client:
        result = await client.call_tool(
            "gemini-ask", {"prompt": "q", "jsonSchema": {"type": 5}}, progress_callback=on_progress
        )
    assert result.is_error
    assert seen[0] == (0, None, "🔍 Starting gemini-ask") and seen[-1] == (100, 100, "❌ gemini-ask failed")


async def test_a_keepalive_quotes_at_most_the_last_150_characters_of_the_output(relay: InMemory) -> None:
    seen: Seen = []
    release = anyio.Event()
    long_tail = "x" * 400 + " the latest words"

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))
        if 0 < progress < 100 and message is not None and "the latest words" in message:
            release.set()

    relay.backend.queue(Script(deltas=(long_tail,), hold=release))
    async with relay.client(GEMINI_RELAY_PROGRESS_INTERVAL="0.05") as client:
        result = await client.call_tool("gemini-ask", {"prompt": "long"}, progress_callback=on_progress)
    assert not result.is_error, text_of(result)
    quoted = [m.split("📝 Output: ...", 1)[1] for _, _, m in seen[1:-1] if m is not None and "📝 Output: ..." in m]
    assert quoted and all(len(tail) <= 150 for tail in quoted), quoted
    assert quoted[-1].endswith("the latest words")


async def test_a_run_that_fails_upstream_ends_with_the_failure_notification(relay: InMemory) -> None:
    seen: Seen = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    relay.backend.queue(Script(deltas=(), error=RunFailed("upstream 500: internal error")))
    async with relay.client() as client:
        result = await client.call_tool("gemini-ask", {"prompt": "q"}, progress_callback=on_progress)
    assert result.is_error
    assert seen[0] == (0, None, "🔍 Starting gemini-ask") and seen[-1] == (100, 100, "❌ gemini-ask failed")


async def test_a_call_without_a_token_gets_no_progress_at_all(relay: InMemory) -> None:
    notifications: list[str] = []
    release = anyio.Event()

    async def on_message(message: IncomingMessage) -> None:
        if isinstance(message, types.ServerNotification):
            notifications.append(type(message).__name__)
        elif not isinstance(message, Exception):
            notifications.append(getattr(message, "method", type(message).__name__))

    running = anyio.Event()
    relay.backend.on_run = lambda _spec: running.set()
    relay.backend.queue(Script(deltas=("quiet",), hold=release))
    overrides = {"GEMINI_RELAY_PROGRESS_INTERVAL": "0.02", "GEMINI_MCP_TEST_TOOLS": "1"}
    async with (
        relay.session(options={"message_handler": on_message}, overrides=overrides) as client,
        anyio.create_task_group() as tg,
    ):
        outcome: list[types.CallToolResult] = []

        async def ask() -> None:
            outcome.append(await client.call_tool("gemini-ask", {"prompt": "no token"}))

        tg.start_soon(ask)
        with anyio.fail_after(10):
            await running.wait()
        # The run stays open for ten keepalive intervals (a call with a token gets keepalives by then); the absence
        # of an event has only this bound to show it. The held tool call has no token either.
        await client.call_tool("gemini-timeout-test", {"duration": 200})
        release.set()
    assert not outcome[0].is_error
    assert not [n for n in notifications if "rogress" in n], notifications


async def test_two_concurrent_calls_keep_their_own_progress(relay: InMemory) -> None:
    ask_seen: Seen = []
    wait_seen: Seen = []
    release = anyio.Event()

    def recorder(seen: Seen):  # type: ignore[no-untyped-def]
        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            seen.append((progress, total, message))
            asked = any("own text" in (m or "") for _, _, m in ask_seen)
            if asked and any(0 < p < 100 for p, _, _ in wait_seen):
                release.set()  # both calls have sent keepalives while both ran: the ask may end

        return on_progress

    relay.backend.queue(Script(deltas=("the ask's own text",), hold=release))
    async with (
        relay.client(GEMINI_RELAY_PROGRESS_INTERVAL="0.05", GEMINI_MCP_TEST_TOOLS="1") as client,
        anyio.create_task_group() as tg,
    ):

        async def ask() -> None:
            await client.call_tool("gemini-ask", {"prompt": "mine"}, progress_callback=recorder(ask_seen))

        async def hold() -> None:
            await client.call_tool("gemini-timeout-test", {"duration": 500}, progress_callback=recorder(wait_seen))

        tg.start_soon(ask)
        tg.start_soon(hold)
    assert ask_seen[-1][2] == "✅ gemini-ask completed successfully"
    assert wait_seen[-1][2] == "✅ gemini-timeout-test completed successfully"
    assert any("the ask's own text" in (m or "") for _, _, m in ask_seen)
    assert all("gemini-timeout-test" not in (m or "") for _, _, m in ask_seen)
    assert all("gemini-ask" not in (m or "") and "own text" not in (m or "") for _, _, m in wait_seen)
    assert len(wait_seen) >= 3
