"""Generic chunking: boundary choice, exact reassembly, and the chunk cache's keys, TTL and eviction."""

from __future__ import annotations

import random
import re

import pytest

from gemini_relay.content._errors import ChunkIndexError, ChunkNotFoundError
from gemini_relay.content.chunking import (
    CACHE_MAX_ENTRIES,
    CACHE_TTL_SECONDS,
    CHUNK_THRESHOLD,
    ChunkCache,
    chunk_footer,
    split_text,
)


class FakeClock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


# --- split_text -----------------------------------------------------------------------------------------------


def test_the_defaults_are_a_12k_threshold_8k_chunks_10_minutes_and_50_entries() -> None:
    assert CHUNK_THRESHOLD == 12_000
    assert split_text("a" * 8_000) == ["a" * 8_000]
    assert len(split_text("a" * 8_001)) == 2
    assert CACHE_TTL_SECONDS == 600
    assert CACHE_MAX_ENTRIES == 50


def test_text_that_fits_is_one_chunk_even_when_empty() -> None:
    assert split_text("short", 10) == ["short"]
    assert split_text("", 10) == [""]


def test_a_paragraph_break_in_the_last_40_percent_is_preferred_and_kept_with_the_first_chunk() -> None:
    text = "a" * 70 + "\n\n" + "b" * 10 + "\n" + "c" * 5 + " " + "d" * 50
    chunks = split_text(text, 100)
    assert chunks[0] == "a" * 70 + "\n\n"


def test_a_line_break_is_used_when_there_is_no_paragraph_break_in_the_window() -> None:
    text = "a" * 70 + "\n" + "b" * 10 + " " + "c" * 50
    assert split_text(text, 100)[0] == "a" * 70 + "\n"


def test_a_space_is_used_when_there_is_no_line_break_in_the_window() -> None:
    text = "a" * 70 + " " + "b" * 10 + " " + "c" * 50
    assert split_text(text, 100)[0] == "a" * 70 + " " + "b" * 10 + " "


def test_a_boundary_before_the_last_40_percent_is_ignored_in_favour_of_a_hard_split() -> None:
    text = "a" * 10 + "\n\n" + "b" * 200
    chunks = split_text(text, 100)
    assert chunks[0] == text[:100]
    assert [len(chunk) for chunk in chunks] == [100, 100, 12]


def test_an_early_paragraph_break_does_not_beat_a_later_line_break() -> None:
    text = "a" * 10 + "\n\n" + "b" * 70 + "\n" + "c" * 50
    assert split_text(text, 100)[0] == "a" * 10 + "\n\n" + "b" * 70 + "\n"


def test_a_non_positive_size_is_rejected() -> None:
    with pytest.raises(ValueError, match="positive"):
        split_text("abc", 0)


def mixed_text(size: int) -> str:
    rng = random.Random(20_260_903)
    pieces = ["word", "naïve", "日本語のテキスト", "emoji 🚀🧵", "e\u0301", "Ωμέγα", "x" * 300]
    pieces += [" ", " ", "\n", "\n\n", "\t"]
    out: list[str] = []
    total = 0
    while total < size:
        piece = rng.choice(pieces)
        out.append(piece)
        total += len(piece.encode("utf-8"))
    return "".join(out)


def test_a_1_mb_mixed_text_reassembles_byte_exact_through_the_cache() -> None:
    text = mixed_text(1_000_000)
    chunks = split_text(text)
    assert all(0 < len(chunk) <= 8_000 for chunk in chunks)
    assert all(len(chunk) >= 4_800 for chunk in chunks[:-1])
    cache = ChunkCache()
    key = cache.put(chunks, "text")
    fetched = []
    for index in range(1, len(chunks) + 1):
        chunk, total = cache.get(key, index)
        assert total == len(chunks)
        fetched.append(chunk)
    assert "".join(fetched).encode("utf-8") == text.encode("utf-8")


# --- ChunkCache -----------------------------------------------------------------------------------------------


def test_keys_are_eight_lowercase_hex_and_random_even_for_identical_content() -> None:
    cache = ChunkCache()
    keys = {cache.put(["same"], "text") for _ in range(20)}
    assert len(keys) == 20
    assert all(re.fullmatch(r"[0-9a-f]{8}", key) for key in keys)


def test_a_chunk_is_fetched_by_its_one_based_index_with_the_total() -> None:
    cache = ChunkCache()
    key = cache.put(["one", "two", "three"], "changemode")
    assert cache.get(key, 1) == ("one", 3)
    assert cache.get(key, 3) == ("three", 3)
    assert cache.kind(key) == "changemode"


def test_an_index_outside_the_range_names_the_valid_count() -> None:
    cache = ChunkCache()
    key = cache.put(["one", "two"], "text")
    for index in (0, 3, -1):
        with pytest.raises(ChunkIndexError) as caught:
            cache.get(key, index)
        assert str(caught.value) == f"Chunk {index} does not exist; cache key {key} has 2 chunk(s)."


def test_an_unknown_key_is_not_found() -> None:
    cache = ChunkCache()
    with pytest.raises(ChunkNotFoundError) as caught:
        cache.get("0123abcd", 1)
    assert str(caught.value) == "Chunk cache key 0123abcd not found or expired. Re-run the original request."


@pytest.mark.parametrize("key", ["", "ABCDEF12", "abc", "abcdef123", "abcdef1\n", "../../etc", "abcdefg1", "x" * 500])
def test_a_malformed_key_is_not_found_without_a_lookup(key: str) -> None:
    cache = ChunkCache()
    with pytest.raises(ChunkNotFoundError) as caught:
        cache.get(key, 1)
    assert len(str(caught.value)) < 200
    with pytest.raises(ChunkNotFoundError):
        cache.kind(key)


def test_entries_expire_ten_minutes_after_they_were_stored() -> None:
    clock = FakeClock()
    cache = ChunkCache(clock=clock)
    key = cache.put(["a"], "text")
    clock.now += 599.9
    assert cache.get(key, 1) == ("a", 1)  # a read does not extend the lifetime
    clock.now += 0.1
    with pytest.raises(ChunkNotFoundError):
        cache.get(key, 1)
    assert len(cache) == 0


def test_the_fifty_first_entry_evicts_the_oldest() -> None:
    cache = ChunkCache(clock=FakeClock())
    keys = [cache.put([str(i)], "text") for i in range(51)]
    assert len(cache) == 50
    with pytest.raises(ChunkNotFoundError):
        cache.get(keys[0], 1)
    assert cache.get(keys[1], 1) == ("1", 1)


def test_a_read_refreshes_recency_so_the_next_oldest_is_evicted_instead() -> None:
    cache = ChunkCache(clock=FakeClock())
    keys = [cache.put([str(i)], "text") for i in range(50)]
    cache.get(keys[0], 1)
    cache.put(["new"], "text")
    assert cache.get(keys[0], 1) == ("0", 1)
    with pytest.raises(ChunkNotFoundError):
        cache.get(keys[1], 1)


def test_an_empty_chunk_list_cannot_be_stored() -> None:
    with pytest.raises(ValueError, match="empty"):
        ChunkCache().put([], "text")


# --- footers --------------------------------------------------------------------------------------------------


def test_a_non_final_chunk_footer_names_the_next_fetch() -> None:
    assert chunk_footer(1, 3, "0a1b2c3d") == (
        "\n\n---\nResponse chunk 1/3\nCache key: 0a1b2c3d\n"
        'Use gemini-fetch-chunk with cacheKey="0a1b2c3d" and chunkIndex=2 for the next segment.'
    )


def test_the_final_chunk_footer_closes_without_a_continuation() -> None:
    footer = chunk_footer(3, 3, "0a1b2c3d")
    assert (
        footer
        == "\n\n---\nResponse chunk 3/3\nCache key: 0a1b2c3d\n" + "This is the final chunk; the response is complete."
    )
    assert "chunkIndex" not in footer
