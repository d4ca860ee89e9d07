"""Content-layer errors, built on `gemini_relay.errors` so the lead can fold the chunk errors into that module."""

from __future__ import annotations

from gemini_relay.errors import ChunkError, InputError, PathEscapeError

__all__ = ["ChunkIndexError", "ChunkNotFoundError", "ContentError", "PathEscapeError"]

# The brief's local base; the shared tree already has the right parent for every content error.
ContentError = InputError

_KEY_SHOWN = 40  # a bad key comes from the caller: echo it, but never unbounded


class ChunkNotFoundError(ChunkError):
    """The cache key is malformed, unknown or expired."""

    def __init__(self, key: str) -> None:
        self.key = key
        shown = key if len(key) <= _KEY_SHOWN else key[:_KEY_SHOWN] + "…"
        super().__init__(f"Chunk cache key {shown} not found or expired. Re-run the original request.")


class ChunkIndexError(ChunkError):
    """The key exists but has no chunk with that 1-based index."""

    def __init__(self, index: int, key: str, total: int) -> None:
        self.index = index
        self.key = key
        self.total = total
        super().__init__(f"Chunk {index} does not exist; cache key {key} has {total} chunk(s).")
