"""Feeding a stream decoder its bytes a chunk at a time, as a pipe hands them over."""

from __future__ import annotations

from typing import TypeVar

from gemini_relay.core.events import AgentEvent
from gemini_relay.streams.framing import NdjsonDecoder

D = TypeVar("D", bound=NdjsonDecoder)


def decode_in_chunks(decoder: D, data: bytes, size: int) -> tuple[list[AgentEvent], D]:
    """Every event `decoder` yields for `data` pushed `size` bytes at a time, then flushed; and the decoder."""
    events: list[AgentEvent] = []
    for start in range(0, len(data), size):
        events += decoder.push(data[start : start + size])
    events += decoder.flush()
    return events, decoder
