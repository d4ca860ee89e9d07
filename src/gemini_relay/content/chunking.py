"""Generic response chunking: a boundary-aware splitter and an in-memory, TTL-bounded chunk cache for fetch-chunk."""

from __future__ import annotations

import re
import secrets
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from gemini_relay.content._errors import ChunkIndexError, ChunkNotFoundError

__all__ = [
    "CACHE_MAX_ENTRIES",
    "CACHE_TTL_SECONDS",
    "CHUNK_SIZE",
    "CHUNK_THRESHOLD",
    "ChunkCache",
    "chunk_footer",
    "split_text",
]

CHUNK_THRESHOLD = 12_000  # responses longer than this (chars) are chunked; keeps replies under client output caps
CHUNK_SIZE = 8_000
CACHE_TTL_SECONDS = 10 * 60.0
CACHE_MAX_ENTRIES = 50
_BOUNDARY_WINDOW = 0.4  # look for a boundary only in the last 40 % of a window, so chunks never get tiny
_SEPARATORS = ("\n\n", "\n", " ")
_KEY_RE = re.compile(r"[0-9a-f]{8}")


def split_text(text: str, size: int = CHUNK_SIZE) -> list[str]:
    """Split `text` into chunks of at most `size` characters whose concatenation is exactly `text`.

    Each cut prefers a paragraph break, then a line break, then a space (the separator stays with the earlier
    chunk), searched only in the last 40 % of the window; with none there the cut is hard.
    """
    if size <= 0:
        raise ValueError(f"chunk size must be a positive integer, got {size}")
    chunks: list[str] = []
    cursor = 0
    while len(text) - cursor > size:
        window_end = cursor + size
        earliest = cursor + int(size * (1 - _BOUNDARY_WINDOW))
        end = window_end
        for sep in _SEPARATORS:
            found = text.rfind(sep, earliest, window_end)
            if found > cursor:
                end = found + len(sep)
                break
        chunks.append(text[cursor:end])
        cursor = end
    chunks.append(text[cursor:])
    return chunks


@dataclass(slots=True)
class _Entry:
    chunks: tuple[str, ...]
    kind: str
    expires_at: float


class ChunkCache:
    """Chunks of oversized responses, keyed by a random 8-hex key; entries live for a fixed TTL from creation.

    At most `max_entries` are kept: adding one more evicts the least recently used (a read counts as a use).
    Not thread-safe: it lives on the server's single event loop.
    """

    def __init__(
        self,
        *,
        ttl: float = CACHE_TTL_SECONDS,
        max_entries: int = CACHE_MAX_ENTRIES,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if ttl <= 0 or max_entries <= 0:
            raise ValueError("ttl and max_entries must be positive")
        self._ttl = ttl
        self._max_entries = max_entries
        self._clock = clock
        self._entries: OrderedDict[str, _Entry] = OrderedDict()

    def __len__(self) -> int:
        self._prune()
        return len(self._entries)

    def put(self, chunks: list[str], kind: str) -> str:
        """Store `chunks` and return their new key; `kind` tells fetch-chunk which footer to render."""
        if not chunks:
            raise ValueError("cannot cache an empty chunk list")
        self._prune()
        # Random, never derived from the prompt: identical prompts must not share (or collide on) a key.
        key = secrets.token_hex(4)
        while key in self._entries:
            key = secrets.token_hex(4)
        self._entries[key] = _Entry(tuple(chunks), kind, self._clock() + self._ttl)
        while len(self._entries) > self._max_entries:
            self._entries.popitem(last=False)
        return key

    def get(self, key: str, index: int) -> tuple[str, int]:
        """Return chunk `index` (1-based) of `key` and the chunk count.

        Raises:
            ChunkNotFoundError: the key is malformed, unknown or expired.
            ChunkIndexError: the key exists but `index` is outside 1..total.
        """
        entry = self._lookup(key)
        total = len(entry.chunks)
        if not 1 <= index <= total:
            raise ChunkIndexError(index, key, total)
        return entry.chunks[index - 1], total

    def kind(self, key: str) -> str:
        """Return the `kind` the chunks were stored with (raises ChunkNotFoundError like `get`)."""
        return self._lookup(key).kind

    def _lookup(self, key: str) -> _Entry:
        if not _KEY_RE.fullmatch(key):
            raise ChunkNotFoundError(key)
        self._prune()
        entry = self._entries.get(key)
        if entry is None:
            raise ChunkNotFoundError(key)
        self._entries.move_to_end(key)
        return entry

    def _prune(self) -> None:
        now = self._clock()
        expired = [key for key, entry in self._entries.items() if entry.expires_at <= now]
        for key in expired:
            del self._entries[key]


def chunk_footer(index: int, total: int, key: str) -> str:
    """Footer appended (as is) to generic text chunk `index` of `total`; names the next fetch while one remains."""
    lines = [f"Response chunk {index}/{total}", f"Cache key: {key}"]
    if index < total:
        lines.append(f'Use gemini-fetch-chunk with cacheKey="{key}" and chunkIndex={index + 1} for the next segment.')
    else:
        lines.append("This is the final chunk; the response is complete.")
    return "\n\n---\n" + "\n".join(lines)
