"""Packing whole files into a token budget: the order, what is left out and why, the API count and its estimate."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from gemini_relay.content.context_files import gather
from gemini_relay.content.packing import MAX_COUNT_CALLS, LeftOutReason, PackOrder, Piece, file_block, pack
from gemini_relay.core.tokens import TokenMethod, estimate_tokens
from gemini_relay.errors import InputError

pytestmark = pytest.mark.anyio


def piece(label: str, chars: int) -> Piece:
    return Piece(label, file_block(label, "x" * chars), chars)


async def test_smallest_first_packs_the_most_files_and_names_the_one_left_out_whole() -> None:
    pieces = [piece("big.txt", 400), piece("a.txt", 40), piece("b.txt", 80)]
    packed = await pack(pieces, 80, PackOrder.SMALLEST_FIRST)
    assert packed.files == ("a.txt", "b.txt")
    assert [(i.label, i.reason) for i in packed.left_out] == [("big.txt", LeftOutReason.OVER_BUDGET)]
    assert packed.count.method is TokenMethod.ESTIMATED and packed.count.tokens <= 80
    assert "x" * 400 not in packed.text  # never split: not even a part of it went in


async def test_the_given_order_gives_the_budget_to_the_first_files_and_still_fits_later_small_ones() -> None:
    pieces = [piece("big.txt", 200), piece("huge.txt", 4000), piece("a.txt", 40), piece("b.txt", 40)]
    given = await pack(pieces, 100, PackOrder.GIVEN)
    assert given.files == ("big.txt", "a.txt")
    assert [i.label for i in given.left_out] == ["huge.txt", "b.txt"]
    smallest = await pack(pieces, 100, PackOrder.SMALLEST_FIRST)
    assert smallest.files == ("a.txt", "b.txt")
    assert [i.label for i in smallest.left_out] == ["big.txt", "huge.txt"]


async def test_an_api_count_above_the_estimate_repacks_until_the_counted_context_fits() -> None:
    calls: list[str] = []

    async def three_chars_a_token(text: str) -> int:
        calls.append(text)
        return -(-len(text) // 3)

    pieces = [piece(f"f{i:02}.txt", 100) for i in range(20)]
    packed = await pack(pieces, 500, PackOrder.SMALLEST_FIRST, counter=three_chars_a_token)
    assert packed.count.method is TokenMethod.COUNTED
    assert packed.count.tokens == -(-len(packed.text) // 3) <= 500
    assert 1 < len(calls) <= MAX_COUNT_CALLS and packed.files
    assert len(packed.files) + len(packed.left_out) == 20


async def test_a_counter_that_fails_falls_back_to_the_estimate_and_says_why() -> None:
    async def broken(text: str) -> int:
        raise OSError("connection refused")

    packed = await pack([piece("a.txt", 40)], 100, PackOrder.SMALLEST_FIRST, counter=broken)
    assert packed.count.method is TokenMethod.ESTIMATED and packed.count_error == "connection refused"
    assert packed.count.tokens == estimate_tokens(packed.text)


async def test_a_counter_that_never_agrees_leaves_the_context_empty_rather_than_over_budget() -> None:
    async def always_over(text: str) -> int:
        return 10_000

    packed = await pack([piece("a.txt", 40)], 100, PackOrder.SMALLEST_FIRST, counter=always_over)
    assert packed.files == () and packed.text == "" and packed.count.tokens == 0
    assert [i.label for i in packed.left_out] == ["a.txt"]


def tree(root: Path, count: int) -> None:
    for i in range(count):
        folder = root / f"pkg{i % 50:02}"
        folder.mkdir(exist_ok=True)
        (folder / f"m{i:04}.py").write_text("x = 1\n" * (1 + i % 40), encoding="utf-8")


async def test_a_packed_glob_over_a_5000_file_tree_states_its_count_stays_within_budget_and_names_what_it_left(
    tmp_path: Path,
) -> None:
    tree(tmp_path, 5000)
    started = time.process_time()  # CPU time: the bound is the packer's cost, not a loaded machine's queue
    gathered = gather(["**/*.py"], tmp_path, 20_000, PackOrder.SMALLEST_FIRST)
    packed = await pack(gathered.pieces, 20_000, PackOrder.SMALLEST_FIRST, left_out=gathered.left_out)
    elapsed = time.process_time() - started
    assert elapsed < 2.0, elapsed
    assert 0 < packed.count.tokens <= 20_000 and packed.count.tokens == estimate_tokens(packed.text)
    assert len(packed.files) + len(packed.left_out) == 5000
    assert packed.left_out and all(i.reason is LeftOutReason.OVER_BUDGET for i in packed.left_out)
    sizes = {p.label: p.size for p in gathered.pieces}
    assert max(sizes[f] for f in packed.files) <= min(sizes.get(i.label, 10**9) for i in packed.left_out)


@pytest.mark.parametrize("ref", ["../*", "/etc/*", "~/*", "sub/../../x/*.py", "link/*.py"])
def test_a_glob_that_leaves_the_project_is_refused_before_anything_is_read(tmp_path: Path, ref: str) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "secret.py").write_text("s = 1\n", encoding="utf-8")
    (project / "link").symlink_to(tmp_path / "x")
    with pytest.raises(InputError) as raised:
        gather([ref], project, 1000, PackOrder.SMALLEST_FIRST)
    assert raised.value.field == "files" and "refusing" in str(raised.value)


def test_a_link_out_of_the_project_swept_up_by_a_glob_is_named_and_not_followed(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (tmp_path / "outside.py").write_text("secret = 1\n", encoding="utf-8")
    (project / "in.py").write_text("ok = 1\n", encoding="utf-8")
    (project / "out.py").symlink_to(tmp_path / "outside.py")
    gathered = gather(["*.py"], project, 1000, PackOrder.SMALLEST_FIRST)
    assert [p.label for p in gathered.pieces] == ["in.py"]
    assert [(i.label, i.reason) for i in gathered.left_out] == [("out.py", LeftOutReason.SKIPPED)]


def test_binaries_and_non_utf8_files_are_left_out_by_name(tmp_path: Path) -> None:
    (tmp_path / "a.bin").write_bytes(b"\x00\x01")
    (tmp_path / "b.txt").write_bytes(b"\xff\xfe bad")
    (tmp_path / "c.txt").write_text("fine", encoding="utf-8")
    gathered = gather(["*"], tmp_path, 1000, PackOrder.GIVEN)
    assert [p.label for p in gathered.pieces] == ["c.txt"]
    assert {(i.label, i.reason) for i in gathered.left_out} == {
        ("a.bin", LeftOutReason.BINARY),
        ("b.txt", LeftOutReason.NOT_UTF8),
    }
    assert gather(["nothing/*.md"], tmp_path, 10, PackOrder.GIVEN).unmatched == ("nothing/*.md",)
