"""changeMode in memory: the answer's edit blocks come back parsed in `_meta.edits`, and a long edit set is paged
into chunks that gemini-ask serves back by cache key and index."""

from __future__ import annotations

import pytest

from tests.inmemory.conftest import InMemory, text_of
from tests.inmemory.scripted import answer

pytestmark = pytest.mark.anyio


def edit_block(name: str, line: int, old: str, new: str) -> str:
    return f"**FILE: {name}:{line}**\n```\nOLD:\n{old}\nNEW:\n{new}\n```\n"


async def test_edit_blocks_are_parsed_into_meta_edits(relay: InMemory) -> None:
    relay.backend.queue(answer(edit_block("app.py", 2, "    return 1", "    return 2"), pieces=3))
    async with relay.client() as client:
        result = await client.call_tool("gemini-ask", {"prompt": "bump it", "changeMode": True})
    assert not result.is_error, text_of(result)
    assert "### Edit 1: app.py" in text_of(result)
    assert result.meta is not None
    assert result.meta["edits"] == [
        {"file": "app.py", "startLine": 2, "endLine": 2, "old": "    return 1", "new": "    return 2"}
    ]
    assert "chunked" not in result.meta
    spec = relay.backend.specs[0]
    assert "bump it" in spec.prompt and spec.prompt != "bump it"  # wrapped in the changeMode instructions


async def test_a_long_edit_set_is_chunked_and_every_chunk_is_served_by_its_cache_key(relay: InMemory) -> None:
    body = "\n".join(f"    value_{i} = {'x' * 60}" for i in range(40))
    blocks = "".join(edit_block(f"mod{n}.py", 1, body, body.replace("x", "y")) for n in range(12))
    relay.backend.queue(answer(blocks, pieces=7))
    async with relay.client() as client:
        first = await client.call_tool("gemini-ask", {"prompt": "rename", "changeMode": True})
        assert first.meta is not None and first.meta["chunked"] is True, text_of(first)
        key, total = first.meta["chunkCacheKey"], first.meta["totalChunks"]
        rest = [
            await client.call_tool("gemini-ask", {"prompt": "-", "chunkCacheKey": key, "chunkIndex": index})
            for index in range(2, total + 1)
        ]
    assert total > 1 and len(first.meta["edits"]) == 12
    assert all(not r.is_error for r in rest), [text_of(r) for r in rest]
    texts = [text_of(first), *map(text_of, rest)]
    seen = sorted({int(t.split("### Edit ", 1)[1].split(":", 1)[0]) for t in texts})
    assert seen[0] == 1 and all(f"mod{n}.py" in "".join(texts) for n in range(12))
    assert len(relay.backend.specs) == 1  # paging is no model turn
