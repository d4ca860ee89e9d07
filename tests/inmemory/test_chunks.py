"""Long answers in memory: over the threshold a reply is chunk 1 plus a footer, gemini-fetch-chunk serves the rest,
and the chunks reassemble to the answer byte for byte."""

from __future__ import annotations

import pytest

from gemini_relay.content.chunking import CHUNK_SIZE, CHUNK_THRESHOLD
from tests.fakes.fake_gemini_api import big_text
from tests.harness import CHUNK_FOOTER, chunk_bodies
from tests.inmemory.conftest import InMemory, text_of
from tests.inmemory.scripted import answer

pytestmark = pytest.mark.anyio


def long_text(chars: int) -> str:
    line = "line {:06d} naïve café ✓ the quick brown fox\n"
    return "".join(line.format(i) for i in range(chars // len(line.format(0)) + 1))


async def test_a_long_answer_is_chunked_and_reassembles_through_fetch_chunk(relay: InMemory) -> None:
    text = long_text(CHUNK_THRESHOLD * 4)
    relay.backend.queue(answer(text, pieces=50))
    async with relay.client() as client:
        first = await client.call_tool("gemini-ask", {"prompt": "long"})
        bodies = await chunk_bodies(client, text_of(first))
        footer = CHUNK_FOOTER.search(text_of(first))
        assert footer is not None
        past = await client.call_tool(
            "gemini-fetch-chunk", {"cacheKey": footer.group(3), "chunkIndex": len(bodies) + 1}
        )
    assert first.meta is not None and first.meta["chunked"] and first.meta["totalChunks"] == len(bodies) > 1
    assert all(len(b) <= CHUNK_SIZE for b in bodies)
    whole = "".join(bodies).removeprefix("Gemini response:\n").rsplit("\n\n🧵 conversationId:", 1)[0]
    assert whole == text
    assert past.is_error
    assert len(relay.backend.specs) == 1


async def test_a_one_megabyte_answer_is_cut_at_line_ends_and_reassembles_byte_exact_through_fetch_chunk(
    relay: InMemory,
) -> None:
    relay.backend.queue(answer(big_text(1024), pieces=200))
    async with relay.client() as client:
        first = await client.call_tool("gemini-ask", {"prompt": "big"})
        text = text_of(first)
        bodies = await chunk_bodies(client, text)
        footer = CHUNK_FOOTER.search(text)
        assert footer is not None, text[-300:]
        last = await client.call_tool("gemini-fetch-chunk", {"cacheKey": footer.group(3), "chunkIndex": len(bodies)})
    assert first.meta is not None and first.meta["chunked"] and first.meta["totalChunks"] == len(bodies) > 100
    key = first.meta["chunkCacheKey"]
    assert f'Use gemini-fetch-chunk with cacheKey="{key}" and chunkIndex=2 for the next segment.' in text
    assert all(len(b) <= CHUNK_SIZE for b in bodies)
    assert all(b.endswith("\n") for b in bodies[:-1])  # cut at line ends, never mid-line
    whole = "".join(bodies).removeprefix("Gemini response:\n").rsplit("\n\n🧵 conversationId:", 1)[0]
    assert whole == big_text(1024)
    assert text_of(last).endswith("This is the final chunk; the response is complete.")


@pytest.mark.parametrize("text", ["short", big_text(11)], ids=["short", "eleven-kilobytes"])
async def test_an_answer_under_the_threshold_is_one_reply(relay: InMemory, text: str) -> None:
    relay.backend.queue(answer(text))
    async with relay.client() as client:
        result = await client.call_tool("gemini-ask", {"prompt": "q"})
    assert "Response chunk" not in text_of(result) and result.meta is None
    assert text in text_of(result)


async def test_an_unknown_cache_key_is_an_error(relay: InMemory) -> None:
    async with relay.client() as client:
        result = await client.call_tool("gemini-fetch-chunk", {"cacheKey": "deadbeef", "chunkIndex": 2})
    assert result.is_error and "deadbeef" in text_of(result)
