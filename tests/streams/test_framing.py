"""LineFramer and parse_json_line: bytes in arbitrary chunks -> whole lines -> JSON objects, noise skipped."""

from __future__ import annotations

import pytest

from gemini_relay.streams.framing import MAX_LINE_BYTES, LineFramer, parse_json_line


def feed(framer: LineFramer, data: bytes, size: int) -> list[str]:
    lines: list[str] = []
    for i in range(0, len(data), size):
        lines += framer.push(data[i : i + size])
    return lines + framer.flush()


# --- LineFramer -----------------------------------------------------------------------------------------------


def test_complete_lines_in_one_chunk_come_out_in_order() -> None:
    framer = LineFramer()
    assert framer.push(b"one\ntwo\nthree\n") == ["one", "two", "three"]
    assert framer.flush() == []


@pytest.mark.parametrize("size", [1, 2, 3, 5, 7, 64])
def test_lines_split_at_any_chunk_boundary_are_reassembled(size: int) -> None:
    data = b"alpha\nbeta gamma\n\ndelta\n"
    assert feed(LineFramer(), data, size) == ["alpha", "beta gamma", "", "delta"]


def test_a_partial_line_is_held_until_its_newline_arrives() -> None:
    framer = LineFramer()
    assert framer.push(b"hel") == []
    assert framer.push(b"lo") == []
    assert framer.push(b"\nwor") == ["hello"]
    assert framer.push(b"ld\n") == ["world"]


def test_crlf_line_endings_lose_the_carriage_return() -> None:
    assert feed(LineFramer(), b"one\r\ntwo\r\n", 1) == ["one", "two"]
    assert LineFramer().push(b"a\r\nb\r\n") == ["a", "b"]


def test_a_carriage_return_split_from_its_newline_is_still_removed() -> None:
    framer = LineFramer()
    assert framer.push(b"one\r") == []
    assert framer.push(b"\n") == ["one"]


def test_a_carriage_return_inside_a_line_is_kept() -> None:
    assert LineFramer().push(b"a\rb\n") == ["a\rb"]


def test_the_final_line_without_a_newline_comes_out_on_flush() -> None:
    framer = LineFramer()
    assert framer.push(b"first\nlast") == ["first"]
    assert framer.flush() == ["last"]
    assert framer.flush() == []


def test_flush_of_a_final_crlf_fragment_strips_the_carriage_return() -> None:
    framer = LineFramer()
    framer.push(b"last\r")
    assert framer.flush() == ["last"]


def test_flush_with_nothing_buffered_returns_nothing() -> None:
    framer = LineFramer()
    assert framer.flush() == []
    framer.push(b"done\n")
    assert framer.flush() == []


def test_empty_chunks_change_nothing() -> None:
    framer = LineFramer()
    assert framer.push(b"") == []
    assert framer.push(b"x") == []
    assert framer.push(b"") == []
    assert framer.push(b"\n") == ["x"]


def test_utf8_split_inside_a_multibyte_character_is_decoded_whole() -> None:
    data = "café 👋 你好\n".encode()
    assert feed(LineFramer(), data, 1) == ["café 👋 你好"]


def test_invalid_utf8_bytes_become_replacement_characters_instead_of_failing() -> None:
    framer = LineFramer()
    assert framer.push(b"ok \xff\xfe end\n") == ["ok \ufffd\ufffd end"]
    assert framer.push(b"next\n") == ["next"]


def test_the_default_line_guard_is_8_mib() -> None:
    assert MAX_LINE_BYTES == 8 * 1024 * 1024
    framer = LineFramer()
    big = b"x" * (1024 * 1024)
    assert framer.push(big + b"\n") == ["x" * (1024 * 1024)]
    assert framer.dropped == 0


def test_a_line_of_exactly_the_limit_is_kept() -> None:
    framer = LineFramer(max_line_bytes=10)
    assert framer.push(b"0123456789\n") == ["0123456789"]
    assert framer.dropped == 0


def test_an_oversized_line_is_dropped_counted_and_the_next_line_is_intact() -> None:
    framer = LineFramer(max_line_bytes=10)
    assert framer.push(b"before\n" + b"y" * 11 + b"\nafter\n") == ["before", "after"]
    assert framer.dropped == 1


def test_an_oversized_line_arriving_in_many_chunks_is_dropped_once() -> None:
    framer = LineFramer(max_line_bytes=10)
    lines = feed(framer, b"z" * 100 + b"\nnext\n", 3)
    assert lines == ["next"]
    assert framer.dropped == 1


def test_the_framer_recovers_after_several_oversized_lines() -> None:
    framer = LineFramer(max_line_bytes=4)
    lines = feed(framer, b"long-one\nok\nlong-two\nfine\n", 2)
    assert lines == ["ok", "fine"]
    assert framer.dropped == 2


def test_an_oversized_final_line_without_newline_is_not_flushed() -> None:
    framer = LineFramer(max_line_bytes=4)
    assert framer.push(b"a\n" + b"b" * 9) == ["a"]
    assert framer.flush() == []
    assert framer.dropped == 1
    assert framer.push(b"c\n") == ["c"]


def test_the_limit_counts_bytes_not_characters() -> None:
    framer = LineFramer(max_line_bytes=4)
    assert framer.push("ééé\n".encode()) == []  # 6 bytes
    assert framer.dropped == 1
    assert framer.push("éé\n".encode()) == ["éé"]


# --- parse_json_line ------------------------------------------------------------------------------------------


def test_a_json_object_line_is_parsed() -> None:
    assert parse_json_line('{"type":"init","n":1}') == {"type": "init", "n": 1}


def test_surrounding_whitespace_is_ignored() -> None:
    assert parse_json_line('  {"a": [1, 2]}  \r') == {"a": [1, 2]}


@pytest.mark.parametrize(
    "line",
    [
        "",
        "   ",
        "Loaded cached credentials.",
        "Both GOOGLE_API_KEY and GEMINI_API_KEY are set. Using GOOGLE_API_KEY.",
        "[STARTUP] Phase 'cleanup_ops' was started but never ended.",
        "[1, 2, 3]",
        '"a string"',
        "42",
        "null",
        "{not json}",
        '{"truncated": ',
        '{"a": 1} trailing',
        "\ufffd{garbage",
    ],
)
def test_blanks_noise_non_objects_and_corrupt_json_are_skipped(line: str) -> None:
    assert parse_json_line(line) is None


def test_a_line_decoded_with_replacement_characters_still_parses_when_they_are_inside_strings() -> None:
    line = LineFramer().push(b'{"text":"a\xffb"}\n')[0]
    assert parse_json_line(line) == {"text": "a\ufffdb"}


def test_a_lone_surrogate_escape_decodes_to_a_replacement_character_and_a_real_pair_survives() -> None:
    line = '{"text": "a \\ud800 b", "ok": "\\ud83d\\ude00", "list": ["\\udfff"], "\\udc00": 1}'
    assert parse_json_line(line) == {"text": "a \ufffd b", "ok": "😀", "list": ["\ufffd"], "\ufffd": 1}
