"""changeMode: the request wrapper, both edit-block dialects, rendering, chunk footers and `_meta.edits`."""

from __future__ import annotations

from pathlib import Path

import pytest

from gemini_relay.content.changemode import (
    NO_EDITS_PREFIX,
    Edit,
    changemode_footer,
    edits_as_meta,
    fill_template,
    no_edits_text,
    parse_edits,
    render_edits,
    validate_edits,
    validation_failed_text,
    wrap_changemode,
)

APPLY_FOOTER = (
    "\n---\nApply these edits in order. Each edit uses exact string matching, so the old_str must match exactly what "
    "appears between the code blocks."
)

# --- wrapping -------------------------------------------------------------------------------------------------


def test_wrapping_puts_the_request_under_the_changemode_instructions() -> None:
    wrapped = wrap_changemode("Rename foo to bar")
    assert wrapped.startswith("[CHANGEMODE INSTRUCTIONS]\nYou are generating code modifications")
    assert wrapped.endswith("\nUSER REQUEST:\nRename foo to bar\n")
    assert "**FILE: [filename]:[line_number]**\n```\nOLD:\n" in wrapped
    assert "IMPORTANT: The OLD section must be an EXACT copy from the file that can be found with Ctrl+F!" in wrapped


def test_wrapping_rewrites_file_prefixes_to_at_references_but_not_inside_other_words() -> None:
    wrapped = wrap_changemode("fix file:src/a.ts and (file:b.py) but keep profile:x and a.file:y")
    assert wrapped.endswith("fix @src/a.ts and (@b.py) but keep profile:x and a.file:y\n")


def test_placeholders_inside_the_users_prompt_survive_wrapping_verbatim() -> None:
    prompt = "render {{x}} and {{PROMPT}} and {{ PROMPT }} and \\1 \\g<0>"
    assert wrap_changemode(prompt).endswith(f"USER REQUEST:\n{prompt}\n")


def test_template_filling_is_single_pass_and_keeps_unknown_placeholders() -> None:
    assert fill_template("A {{X}} {{Y}} {{x}}", {"X": "{{Y}}"}) == "A {{Y}} {{Y}} {{x}}"


# --- parsing: jamubc's fenced form ----------------------------------------------------------------------------

JAMUBC_REPLY = """Here are the edits.

**FILE: src/utils/helper.js:100**
```
OLD:
function getMessage() {
  return "Hello World";
}
NEW:
function getMessage() {
  return "Hello Universe!";
}
```

**FILE: index.html:245**
```
OLD:
        </div>
      </div>
NEW:
        </div>
      </footer>
```
Done."""


def test_jamubcs_fenced_form_parses_with_the_end_line_derived_from_old_lines() -> None:
    assert parse_edits(JAMUBC_REPLY) == [
        Edit(
            "src/utils/helper.js",
            100,
            102,
            'function getMessage() {\n  return "Hello World";\n}',
            'function getMessage() {\n  return "Hello Universe!";\n}',
        ),
        Edit("index.html", 245, 246, "        </div>\n      </div>", "        </div>\n      </footer>"),
    ]


def test_crlf_replies_parse_without_carriage_returns() -> None:
    edits = parse_edits(JAMUBC_REPLY.replace("\n", "\r\n"))
    assert edits == parse_edits(JAMUBC_REPLY)
    assert all("\r" not in edit.old_code + edit.new_code for edit in edits)


def test_a_language_tag_on_the_fence_and_blank_lines_after_markers_are_tolerated() -> None:
    reply = "**FILE: a.py:3**\n\n```python\nOLD:\n\n    x = 1   \nNEW:\n    x = 2\n\n```\n"
    assert parse_edits(reply) == [Edit("a.py", 3, 3, "    x = 1", "    x = 2")]


def test_an_insertion_with_empty_old_code_spans_its_single_start_line() -> None:
    reply = "**FILE: a.py:7**\n```\nOLD:\nNEW:\nimport os\n```"
    assert parse_edits(reply) == [Edit("a.py", 7, 7, "", "import os")]


def test_a_block_without_a_new_marker_is_ignored() -> None:
    reply = "**FILE: a.py:1**\n```\nOLD:\nx\n```\n**FILE: b.py:2**\n```\nOLD:\ny\nNEW:\nz\n```"
    assert parse_edits(reply) == [Edit("b.py", 2, 2, "y", "z")]


def test_a_fenced_block_that_never_closes_is_ignored_rather_than_swallowing_prose() -> None:
    reply = "**FILE: a.py:1**\n```\nOLD:\nx\nNEW:\ny\n\nHope this helps!"
    assert parse_edits(reply) == []


def test_prose_without_edit_blocks_parses_to_nothing() -> None:
    assert parse_edits("I could not find anything to change. **FILE:** is the format.") == []


# --- parsing: the bridge's ===OLD=== form ---------------------------------------------------------------------

BRIDGE_REPLY = """Preamble is tolerated.
**FILE: src/a.py:10-11**
===OLD===
def f():
    return 1
===NEW===
def f():
    return 2

**FILE: src/b.py:3-3**
===OLD===
OLD:
NEW:
===NEW===
value: 1
"""


def test_the_bridges_marker_form_parses_ranges_and_ends_each_block_at_the_next_header() -> None:
    assert parse_edits(BRIDGE_REPLY) == [
        Edit("src/a.py", 10, 11, "def f():\n    return 1", "def f():\n    return 2"),
        Edit("src/b.py", 3, 3, "OLD:\nNEW:", "value: 1"),
    ]


def test_the_bridges_form_keeps_trailing_spaces_and_stops_at_an_end_marker() -> None:
    reply = "**FILE: a.md:1-2**\n===OLD===\nline  \n```\n===NEW===\nnew  \n```\n===END===\ntrailing prose"
    assert parse_edits(reply) == [Edit("a.md", 1, 2, "line  \n```", "new  \n```")]


def test_a_fence_wrapped_marker_block_ends_at_its_closing_fence() -> None:
    reply = "**FILE: a.py:4-4**\n```\n===OLD===\nx\n===NEW===\ny\n```\nThat is all."
    assert parse_edits(reply) == [Edit("a.py", 4, 4, "x", "y")]


def test_legacy_unfenced_old_new_markers_parse_to_the_end_of_the_block() -> None:
    reply = "**FILE: a.py:2-3**\nOLD:\nx\ny\nNEW:\nz\n\n**FILE: b.py:1**\nOLD:\nq\nNEW:\nr"
    assert parse_edits(reply) == [Edit("a.py", 2, 3, "x\ny", "z"), Edit("b.py", 1, 1, "q", "r")]


def test_a_bare_header_without_a_root_has_an_unknown_range() -> None:
    reply = "**FILE: src/a.py**\n===OLD===\nb = 2\n===NEW===\nb = 3\n"
    assert parse_edits(reply) == [Edit("src/a.py", 0, 0, "b = 2", "b = 3")]


def test_a_bare_header_gets_its_range_from_the_file_under_the_root(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_bytes(b"a = 1\r\nb = 2\r\nc = 3\r\n")
    reply = f"**FILE: src/a.py**\n===OLD===\nb = 2\nc = 3\n===NEW===\nbc = 5\n**FILE: {tmp_path}/src/a.py**\n"
    reply += "===OLD===\na = 1\n===NEW===\na = 0\n**FILE: src/a.py**\n===OLD===\nmissing\n===NEW===\nx\n"
    assert parse_edits(reply, root=tmp_path) == [
        Edit("src/a.py", 2, 3, "b = 2\nc = 3", "bc = 5"),
        Edit(f"{tmp_path}/src/a.py", 1, 1, "a = 1", "a = 0"),
        Edit("src/a.py", 0, 0, "missing", "x"),
    ]


def test_range_inference_never_reads_a_file_outside_the_root(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (tmp_path / "outside.py").write_text("secret = 1\n", encoding="utf-8")
    reply = "**FILE: ../outside.py**\n===OLD===\nsecret = 1\n===NEW===\nx\n"
    assert parse_edits(reply, root=root) == [Edit("../outside.py", 0, 0, "secret = 1", "x")]


def test_both_dialects_can_appear_in_one_reply_in_order() -> None:
    reply = "**FILE: a.py:1**\n```\nOLD:\nx\nNEW:\ny\n```\n**FILE: b.py:5-6**\n===OLD===\np\nq\n===NEW===\nr\n"
    assert [edit.filename for edit in parse_edits(reply)] == ["a.py", "b.py"]


# --- validation -----------------------------------------------------------------------------------------------


def test_validation_reports_jamubcs_three_problems() -> None:
    edits = [
        Edit("", 1, 1, "x", ""),
        Edit("a.py", 5, 2, "x", "y"),
        Edit("b.py", 1, 1, "", ""),
        Edit("c.py", 0, 0, "", "z"),
    ]
    errors = validate_edits(edits)
    assert errors == ["Edit missing filename", "Invalid line range for a.py: 5 > 2", "Empty edit for b.py"]
    assert validation_failed_text(errors) == "Edit validation failed:\n" + "\n".join(errors)


def test_a_header_without_a_filename_parses_and_then_fails_validation() -> None:
    edits = parse_edits("**FILE: :42**\n```\nOLD:\nx\nNEW:\ny\n```")
    assert edits == [Edit("", 42, 42, "x", "y")]
    assert validate_edits(edits) == ["Edit missing filename"]


# --- rendering ------------------------------------------------------------------------------------------------


def test_a_single_chunk_renders_the_relays_exact_text() -> None:
    bodies = render_edits([Edit("src/a.py", 3, 3, "x = 1", "x = 2")])
    assert len(bodies) == 1
    assert bodies[0] + changemode_footer(1, 1, None) == (
        "[CHANGEMODE OUTPUT - Gemini has analyzed the files and provided these edits]\n\n"
        "I have prepared 1 modification for your codebase.\n\n"
        "IMPORTANT: Apply these edits directly WITHOUT reading the files first. The edits below contain exact text "
        "matches from the current file contents.\n\n"
        "### Edit 1: src/a.py\n\nReplace this exact text:\n```\nx = 1\n```\n\nWith this text:\n```\nx = 2\n```\n"
        + APPLY_FOOTER
    )


def test_no_edits_render_no_chunks() -> None:
    assert render_edits([]) == []


def edit_of(filename: str, size: int, tag: str = "o") -> Edit:
    return Edit(filename, 1, 1, tag * size, "n")


def test_edits_over_20k_chars_split_into_chunks_grouped_per_file_with_global_numbering() -> None:
    edits = [edit_of("a.py", 9_000), edit_of("b.py", 9_000), edit_of("a.py", 2_000), edit_of("c.py", 9_000)]
    bodies = render_edits(edits)
    assert len(bodies) == 2
    first, second = bodies
    assert first.startswith("[CHANGEMODE OUTPUT - Chunk 1 of 2]\n\n")
    assert "This chunk contains 2 complete edits that can be applied independently." in first
    assert "### Edit 1: a.py" in first and "### Edit 2: a.py" in first
    assert "### Edit 3: b.py" in second and "### Edit 4: c.py" in second
    assert all(len(body) <= 20_000 + 1_000 for body in bodies)


def test_a_single_file_over_budget_is_split_between_its_edits() -> None:
    bodies = render_edits([edit_of("big.py", 15_000), edit_of("big.py", 15_000), edit_of("small.py", 100)])
    assert len(bodies) == 2
    assert "### Edit 1: big.py" in bodies[0] and "### Edit 2" not in bodies[0]
    assert "### Edit 2: big.py" in bodies[1] and "### Edit 3: small.py" in bodies[1]


def test_the_size_estimate_counts_overhead_filename_old_and_new() -> None:
    # 250 + 2·4 + 19_742 + 0 = 20_000 fits exactly; one more character does not.
    fits = [Edit("a.py", 1, 1, "o" * 19_742, ""), Edit("b.py", 1, 1, "x", "")]
    assert len(render_edits(fits[:1])) == 1
    assert len(render_edits(fits)) == 2
    assert len(render_edits(fits, max_chars=21_000)) == 1


def test_a_summary_precedes_the_first_chunk_only_when_there_are_more_than_five_edits() -> None:
    five = [edit_of(f"f{i % 2}.py", 10) for i in range(5)]
    assert not render_edits(five)[0].startswith("ChangeMode Summary")
    six = [*five, edit_of("f0.py", 10)]
    assert render_edits(six)[0].startswith(
        "ChangeMode Summary:\nTotal edits: 6\nFiles affected: 2\n\n- f0.py: 4 edits\n- f1.py: 2 edits\n\n"
        "[CHANGEMODE OUTPUT - Gemini"
    )
    chunked = render_edits([edit_of(f"g{i}.py", 8_000) for i in range(6)])
    assert chunked[0].startswith("ChangeMode Summary (Complete analysis across all chunks):\nTotal edits: 6 (across")
    assert not any(body.startswith("ChangeMode Summary") for body in chunked[1:])


def test_code_containing_a_fence_is_wrapped_in_a_longer_fence() -> None:
    body = render_edits([Edit("README.md", 1, 3, "```py\nx\n```", "````\ny\n````")])[0]
    assert "Replace this exact text:\n````\n```py\nx\n```\n````\n" in body
    assert "With this text:\n`````\n````\ny\n````\n`````\n" in body


def test_a_middle_chunk_footer_names_the_exact_next_fetch_call() -> None:
    footer = changemode_footer(1, 3, "0a1b2c3d")
    assert footer.startswith(APPLY_FOOTER + "\n\n---\n**Next Step**: After applying the edits above, retrieve the next")
    assert '\n```\ngemini-fetch-chunk cacheKey="0a1b2c3d" chunkIndex=2\n```\n' in footer
    assert "There are 2 more chunks containing additional edits." in footer
    assert "There is 1 more chunk containing additional edits." in changemode_footer(2, 3, "0a1b2c3d")


def test_the_last_chunk_footer_says_the_edits_are_complete() -> None:
    footer = changemode_footer(3, 3, "0a1b2c3d")
    assert footer == APPLY_FOOTER + (
        "\n\n---\n**Complete**: This was the final chunk (3 of 3); all edits have been delivered."
    )
    assert "gemini-fetch-chunk" not in footer


def test_a_footer_with_chunks_remaining_requires_a_cache_key() -> None:
    with pytest.raises(ValueError, match="cache key"):
        changemode_footer(1, 2, None)


# --- other outputs --------------------------------------------------------------------------------------------


def test_no_edits_text_is_the_relays_marker_followed_by_the_raw_reply() -> None:
    assert NO_EDITS_PREFIX == "No edits found in Gemini's response. Please ensure Gemini uses the OLD/NEW format."
    assert no_edits_text("raw **FILE** text") == f"{NO_EDITS_PREFIX}\n\nraw **FILE** text"


def test_edits_become_meta_entries_with_null_lines_when_the_range_is_unknown() -> None:
    meta = edits_as_meta([Edit("a.py", 2, 4, "o", "n"), Edit("b.py", 0, 0, "x", "y")])
    assert meta == [
        {"file": "a.py", "startLine": 2, "endLine": 4, "old": "o", "new": "n"},
        {"file": "b.py", "startLine": None, "endLine": None, "old": "x", "new": "y"},
    ]
