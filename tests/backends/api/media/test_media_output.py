"""Generated media and sidecars land in the jailed folder: links at their names are replaced, never written through,
and a file that cannot be saved is a clear failure of the run, not a crashed supervisor."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gemini_relay.backends.api.media.output import write_media, write_sidecar
from gemini_relay.errors import RunFailed


def test_links_at_the_image_and_sidecar_names_are_replaced_not_followed(tmp_path: Path) -> None:
    out = Path(os.path.realpath(tmp_path)) / "media"
    out.mkdir()
    victims = [tmp_path / "victim-image", tmp_path / "victim-sidecar"]
    for victim in victims:
        victim.write_bytes(b"keep")
    (out / "a.png").symlink_to(victims[0])
    (out / "a.png.json").symlink_to(victims[1])
    image = write_media(out, "a", b"\x89PNG", "image/png", "a.png")
    sidecar = write_sidecar(image, {"interaction_id": "i"})
    assert [v.read_bytes() for v in victims] == [b"keep", b"keep"]
    assert image == out / "a.png" and not image.is_symlink() and image.read_bytes() == b"\x89PNG"
    assert not sidecar.is_symlink() and b'"interaction_id": "i"' in sidecar.read_bytes()


def test_a_media_folder_swapped_for_a_link_after_the_check_fails_the_run_by_name(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    out = Path(os.path.realpath(tmp_path)) / "media"
    out.symlink_to(outside)
    with pytest.raises(RunFailed, match="could not be saved as .*media.*is no longer the folder checked"):
        write_media(out, "a", b"\x89PNG", "image/png")
    assert list(outside.iterdir()) == []
