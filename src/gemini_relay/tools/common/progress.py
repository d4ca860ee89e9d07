"""Per-call progress keepalives: 0 at start, one every interval with the output tail, 100/100 at the end.

Each call owns its state, so concurrent calls never mix messages, and a call waiting in a queue keeps its client
alive with its own keepalives.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

import anyio

from gemini_relay.core.vocabulary import RunState
from gemini_relay.jobs import RunRecord
from gemini_relay.tools.common.channel import Channel

T = TypeVar("T")
SendProgress = Callable[[float, float | None, str], Awaitable[None]]
TAIL_CHARS = 150


def _rotating(tool: str) -> tuple[str, ...]:
    return (
        f"🧠 {tool} - Gemini is analyzing your request...",
        f"📊 {tool} - Processing files and generating insights...",
        f"✨ {tool} - Creating structured response for your review...",
        f"⏱️ {tool} - Large analysis in progress (this is normal for big requests)...",
        f"🔍 {tool} - Still working... Gemini takes time for quality results...",
    )


class CallProgress:
    """What a tool tells the keepalive about its call: the run to quote, or a text of its own."""

    def __init__(self, tool: str) -> None:
        self.tool = tool
        self.record: RunRecord | None = None
        self.output = ""
        self.ok = False
        self.on_watch: Callable[[RunRecord], None] | None = None  # a task learns its job ids here
        # The way back to the client while the call is answered in place (None in a task, whose request is gone):
        # `await call.channel.ask(schema, message)` puts a form to the user (tools/common/channel.py).
        self.channel: Channel | None = None

    def watch(self, record: RunRecord) -> None:
        self.record = record
        if self.on_watch is not None:
            self.on_watch(record)

    def tail(self) -> str:
        text = self.record.tail if self.record is not None else self.output
        return text[-TAIL_CHARS:].strip()

    def status(self, tick: int) -> str:
        if self.record is not None and self.record.state is RunState.QUEUED:
            return f"⏳ {self.tool} - Waiting in the queue for a free {self.record.backend} slot..."
        messages = _rotating(self.tool)
        return messages[tick % len(messages)]


async def run_with_keepalive(
    tool: str, send: SendProgress | None, interval: float, body: Callable[[CallProgress], Awaitable[T]]
) -> T:
    """Run `body` with keepalives when `send` is given (the call carried a progressToken); silent otherwise.

    `body` must report failure through its result and `CallProgress.ok`, not by raising: only cancellation may
    escape, and then no final notification is sent (a cancelled request gets no response at all).
    """
    call = CallProgress(tool)
    if send is None:
        return await body(call)
    await send(0, None, f"🔍 Starting {tool}")
    async with anyio.create_task_group() as tg:
        tg.start_soon(_tick, call, send, interval)
        try:
            result = await body(call)
        finally:
            tg.cancel_scope.cancel()
    await send(100, 100, f"✅ {tool} completed successfully" if call.ok else f"❌ {tool} failed")
    return result


async def _tick(call: CallProgress, send: SendProgress, interval: float) -> None:
    n = 0
    while True:
        await anyio.sleep(interval)
        n += 1
        message = call.status(n - 1)
        tail = call.tail()
        await send(n, None, f"{message}\n📝 Output: ...{tail}" if tail else message)
