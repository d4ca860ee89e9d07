"""Progress notifications in memory: 0 at the start, numbered keepalives carrying the latest output while the run
is open, 100 at the end — and none at all for a call without a progress token."""

from __future__ import annotations

import anyio
import pytest

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
