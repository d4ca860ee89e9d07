"""gemini-fetch-chunk, and the shared "serve chunk i of a cached reply" used by gemini-ask's chunk paging."""

from __future__ import annotations

from pydantic import Field

from gemini_relay.content.changemode import CHANGEMODE_CHUNK_KIND, changemode_footer
from gemini_relay.content.chunking import ChunkCache, chunk_footer
from gemini_relay.core.vocabulary import Effect
from gemini_relay.tools.common.context import Deps, Reply
from gemini_relay.tools.common.definition import Doc, ToolDef
from gemini_relay.tools.common.inputs import CACHE_KEY_PATTERN, ToolInput
from gemini_relay.tools.common.progress import CallProgress


class FetchChunkInput(ToolInput):
    cache_key: str = Field(pattern=CACHE_KEY_PATTERN, description="A chunked reply's cacheKey.")
    chunk_index: int = Field(ge=1, description="Which chunk, 1-based.")


def cached_chunk(cache: ChunkCache, key: str, index: int) -> str:
    body, total = cache.get(key, index)
    if cache.kind(key) == CHANGEMODE_CHUNK_KIND:
        return body + changemode_footer(index, total, key)
    return body + chunk_footer(index, total, key)


async def fetch_chunk(deps: Deps, args: FetchChunkInput, call: CallProgress) -> Reply:
    return Reply(cached_chunk(deps.chunks, args.cache_key, args.chunk_index))


DOC = Doc(
    "A chunk of a chunked reply, by its cacheKey and chunkIndex (kept 10 minutes).",
    prompt="Fetch the next chunk of a chunked response.",
)
TOOL = ToolDef("gemini-fetch-chunk", FetchChunkInput, fetch_chunk, Effect.LOCAL, DOC)
