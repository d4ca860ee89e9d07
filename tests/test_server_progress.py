"""Progress keepalives: only with a progressToken, per call, including while a call waits in the queue."""

from __future__ import annotations

import anyio
import mcp_types as types
import pytest
from mcp.client.session import IncomingMessage

from tests.harness import Relay
from tests.test_server_surface import text_of

pytestmark = pytest.mark.anyio

Seen = list[tuple[float, float | None, str | None]]


def recorder(seen: Seen):  # type: ignore[no-untyped-def]
    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    return on_progress


async def test_a_call_with_a_token_gets_start_keepalives_with_output_and_a_final_notification(relay: Relay) -> None:
    seen: Seen = []
    async with relay.client(GEMINI_RELAY_PROGRESS_INTERVAL="0.3") as client:
        result = await client.call_tool("gemini-ask", {"prompt": "[[fake:slow:0.6]]"}, progress_callback=recorder(seen))
    assert not result.is_error
    assert seen[0] == (0, None, "🔍 Starting gemini-ask")
    assert seen[-1] == (100, 100, "✅ gemini-ask completed successfully")
    keepalives = seen[1:-1]
    assert keepalives, "no keepalive arrived during a multi-second run"
    assert [p for p, _, _ in keepalives] == list(range(1, len(keepalives) + 1))
    assert all(total is None for _, total, _ in keepalives)
    assert any(m is not None and "📝 Output: ...slow chunk" in m for _, _, m in keepalives)
    assert all(m is not None and len(m.split("📝 Output: ...", 1)[-1]) <= 150 for _, _, m in keepalives)


async def test_a_failed_call_ends_with_the_failure_notification(relay: Relay) -> None:
    seen: Seen = []
    async with relay.client() as client:
        result = await client.call_tool(
            "gemini-ask", {"prompt": "[[fake:error:500]]"}, progress_callback=recorder(seen)
        )
    assert result.is_error
    assert seen[0][2] == "🔍 Starting gemini-ask"
    assert seen[-1] == (100, 100, "❌ gemini-ask failed")


async def test_a_call_without_a_token_gets_no_progress_at_all(relay: Relay) -> None:
    notifications: list[str] = []

    async def on_message(message: IncomingMessage) -> None:
        if isinstance(message, types.ServerNotification):
            notifications.append(type(message).__name__)
        elif not isinstance(message, Exception):
            notifications.append(getattr(message, "method", type(message).__name__))

    async with relay.client(on_message, GEMINI_RELAY_PROGRESS_INTERVAL="0.2") as client:
        result = await client.call_tool("gemini-ask", {"prompt": "[[fake:slow:0.3]]"})
    assert not result.is_error
    assert not [n for n in notifications if "rogress" in n]


async def test_two_concurrent_calls_keep_their_own_progress(relay: Relay) -> None:
    ask_seen: Seen = []
    wait_seen: Seen = []
    async with (
        relay.client(GEMINI_RELAY_PROGRESS_INTERVAL="0.25", GEMINI_MCP_TEST_TOOLS="1") as client,
        anyio.create_task_group() as tg,
    ):

        async def ask() -> None:
            await client.call_tool("gemini-ask", {"prompt": "[[fake:slow:0.5]]"}, progress_callback=recorder(ask_seen))

        async def hold() -> None:
            await client.call_tool("gemini-timeout-test", {"duration": 1500}, progress_callback=recorder(wait_seen))

        tg.start_soon(ask)
        tg.start_soon(hold)
    assert ask_seen[-1][2] == "✅ gemini-ask completed successfully"
    assert wait_seen[-1][2] == "✅ gemini-timeout-test completed successfully"
    assert all("gemini-timeout-test" not in (m or "") for _, _, m in ask_seen)
    assert all("gemini-ask" not in (m or "") and "slow chunk" not in (m or "") for _, _, m in wait_seen)
    assert len(wait_seen) >= 3


async def test_a_call_waiting_in_the_queue_keeps_sending_its_own_keepalives(relay: Relay) -> None:
    first: Seen = []
    queued: Seen = []
    results: list[types.CallToolResult] = []
    async with (
        relay.client(GEMINI_RELAY_PROGRESS_INTERVAL="0.25", GEMINI_RELAY_MAX_CONCURRENT="1") as client,
        anyio.create_task_group() as tg,
    ):

        async def run(prompt: str, seen: Seen) -> None:
            results.append(await client.call_tool("gemini-ask", {"prompt": prompt}, progress_callback=recorder(seen)))

        tg.start_soon(run, "[[fake:slow:0.6]] first", first)
        await anyio.to_thread.run_sync(relay.api.wait_for_requests, 1)
        tg.start_soon(run, "second", queued)
    assert all(not r.is_error for r in results)
    assert any(m is not None and "Waiting in the queue for a free gemini slot" in m for _, _, m in queued)
    assert queued[-1][2] == "✅ gemini-ask completed successfully"
    assert any("You said: second" in text_of(r) for r in results)
