"""The jail on the file as opened: a folder on the way swapped for a link out after the path was checked is caught
on the descriptor, for `@` inlining and for packed `files` alike, and an image is read once, typed by its content."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import gemini_relay.content.context_files as context_files
from gemini_relay.content import inline
from gemini_relay.content.image_file import ImageRefused, read_image, sniff_image
from gemini_relay.content.inline import Matched, match_files
from gemini_relay.content.jail import OutsideRoots, open_jailed
from gemini_relay.content.packing import LeftOutReason, PackOrder
from tests.fakes.fake_gemini_api import TINY_PNG


def swap_for_a_link_out(folder: Path, outside: Path) -> None:
    """What an attacker does between the check and the read: the checked folder becomes a link to `outside`."""
    folder.rename(folder.with_name(folder.name + ".old"))
    folder.symlink_to(outside, target_is_directory=True)


@pytest.fixture
def tree(tmp_path: Path) -> tuple[Path, Path]:
    project, outside = tmp_path / "project", tmp_path / "outside"
    (project / "sub").mkdir(parents=True)
    outside.mkdir()
    (project / "sub" / "notes.txt").write_text("inside\n", encoding="utf-8")
    (outside / "notes.txt").write_text("SECRET outside the project\n", encoding="utf-8")
    return project, outside


def test_a_folder_swapped_for_a_link_out_after_the_check_is_caught_on_the_descriptor(tree: tuple[Path, Path]) -> None:
    project, outside = tree
    real = os.path.realpath(project / "sub" / "notes.txt")
    swap_for_a_link_out(project / "sub", outside)
    with pytest.raises(OutsideRoots):
        open_jailed(real, [os.path.realpath(project)])


def test_a_last_component_swapped_for_a_link_is_not_followed(tree: tuple[Path, Path]) -> None:
    project, outside = tree
    real = os.path.realpath(project / "sub" / "notes.txt")
    Path(real).unlink()
    Path(real).symlink_to(outside / "notes.txt")
    with pytest.raises(OSError, match="link|Too many levels"):
        open_jailed(real, [os.path.realpath(project)])


def test_a_packed_file_whose_folder_becomes_a_link_out_after_matching_is_left_out_not_read(
    tree: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    project, outside = tree
    real_match = match_files

    def match_then_swap(refs: list[str], root: Path) -> Matched:
        matched = real_match(refs, root)
        swap_for_a_link_out(project / "sub", outside)  # the race, at its worst moment: after the match
        return matched

    monkeypatch.setattr(context_files, "match_files", match_then_swap)
    gathered = context_files.gather(["sub/notes.txt"], project, 1000, PackOrder.GIVEN)
    assert gathered.pieces == ()
    assert [(i.label, i.reason) for i in gathered.left_out] == [("sub/notes.txt", LeftOutReason.SKIPPED)]


@pytest.mark.parametrize(
    ("data", "mime"),
    [
        (TINY_PNG, "image/png"),
        (b"\xff\xd8\xff\xe0" + bytes(16), "image/jpeg"),
        (b"GIF89a" + bytes(16), "image/gif"),
        (b"RIFF\x10\x00\x00\x00WEBPVP8 " + bytes(8), "image/webp"),
        (b'<svg xmlns="http://www.w3.org/2000/svg"/>', None),
        (b"RIFF\x10\x00\x00\x00WAVEfmt " + bytes(8), None),
        (b"just some notes\n", None),
    ],
)
def test_an_image_type_is_judged_on_its_bytes(data: bytes, mime: str | None) -> None:
    assert sniff_image(data) == mime


def test_an_image_named_png_that_is_text_is_refused_by_its_content(tmp_path: Path) -> None:
    (tmp_path / "notes.png").write_text("not an image\n", encoding="utf-8")
    with pytest.raises(ImageRefused, match=r"is not a PNG, JPEG, WebP or GIF image by its content"):
        read_image(str(tmp_path / "notes.png"), [os.path.realpath(tmp_path)], 1024)
    (tmp_path / "shot.jpg").write_bytes(TINY_PNG)  # a real image under a wrong name: sent as what it is
    assert read_image(str(tmp_path / "shot.jpg"), [os.path.realpath(tmp_path)], 1024) == (TINY_PNG, "image/png")


def test_an_at_reference_whose_folder_becomes_a_link_out_after_resolving_is_skipped_not_inlined(
    tree: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    project, outside = tree
    real_resolve = inline._Inliner.resolve

    def resolve_then_swap(self: inline._Inliner, candidate: str) -> list[inline._Found] | None:
        found = real_resolve(self, candidate)
        swap_for_a_link_out(project / "sub", outside)  # the race, at its worst moment: after the resolve
        return found

    monkeypatch.setattr(inline._Inliner, "resolve", resolve_then_swap)
    result = inline.inline_references("read @sub/notes.txt", project)
    assert "SECRET" not in result.text
    assert result.files == () and result.skipped == ("sub/notes.txt",)
