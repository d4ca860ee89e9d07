"""gemini-fetch-chunk, and the shared "serve chunk i of a cached reply" used by gemini-ask's chunk paging."""

from __future__ import annotations

from gemini_relay.content.changemode import CHANGEMODE_CHUNK_KIND, changemode_footer
from gemini_relay.content.chunking import ChunkCache, chunk_footer
from gemini_relay.tools.common.context import Deps, Reply
from gemini_relay.tools.common.inputs import FetchChunkInput
from gemini_relay.tools.common.progress import CallProgress


def cached_chunk(cache: ChunkCache, key: str, index: int) -> str:
    body, total = cache.get(key, index)
    if cache.kind(key) == CHANGEMODE_CHUNK_KIND:
        return body + changemode_footer(index, total, key)
    return body + chunk_footer(index, total, key)


async def fetch_chunk(deps: Deps, args: FetchChunkInput, call: CallProgress) -> Reply:
    return Reply(cached_chunk(deps.chunks, args.cache_key, args.chunk_index))
