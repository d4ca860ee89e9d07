"""The in-memory tier itself: a call reaches the scripted backend and its answer comes back as the relay words it."""

from __future__ import annotations

import pytest

from tests.inmemory.conftest import InMemory, text_of
from tests.inmemory.scripted import answer

pytestmark = pytest.mark.anyio


async def test_an_ask_is_answered_by_the_scripted_backend_in_process(relay: InMemory) -> None:
    relay.backend.queue(answer("Forty-two.", pieces=3))
    async with relay.client() as client:
        result = await client.call_tool("gemini-ask", {"prompt": "the answer?"})
    assert not result.is_error, text_of(result)
    assert text_of(result).startswith("Gemini response:\nForty-two.")
    assert [s.prompt for s in relay.backend.specs] == ["the answer?"]
