"""gemini-image on agy: the prompt, finding the run's image in its brain folder, measuring it, the jailed copy."""

from __future__ import annotations

import os
import struct
import time
from pathlib import Path

import anyio
import pytest

from gemini_relay.backends.agy.agy_image import (
    ASPECT_RATIOS,
    SIZES,
    check_dimensions,
    find_generated_image,
    image_dimensions,
    image_prompt,
    resolve_output_path,
    save_generated_image,
)
from gemini_relay.backends.capabilities import ImageRequest
from gemini_relay.core.spec import RunSpec
from gemini_relay.core.vocabulary import BackendName
from gemini_relay.errors import InputError, RunFailed
from gemini_relay.jobs.engine.engine import RunEngine
from tests.backends.agy.conftest import AgyWorld
from tests.fakes.fake_agy import png

CID = "0f3e2d1c-aaaa-bbbb-cccc-111122223333"


def jpeg(width: int, height: int) -> bytes:
    app0 = b"\xff\xe0" + struct.pack(">H", 16) + b"JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00"
    sof0 = b"\xff\xc0" + struct.pack(">HBHHB", 11, 8, height, width, 1) + b"\x01\x11\x00"
    return b"\xff\xd8" + app0 + sof0 + b"\xff\xd9"


def webp(kind: bytes, body: bytes) -> bytes:
    return b"RIFF" + struct.pack("<I", 4 + 8 + len(body)) + b"WEBP" + kind + struct.pack("<I", len(body)) + body


def place(state: Path, name: str, data: bytes, mtime: float | None = None, cid: str = CID) -> Path:
    path = state / "brain" / cid / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    if mtime is not None:
        os.utime(path, (mtime, mtime))
    return path


def test_there_are_14_aspect_ratios_and_4_sizes() -> None:
    assert len(ASPECT_RATIOS) == 14 and "21:9" in ASPECT_RATIOS and "1:8" in ASPECT_RATIOS
    assert list(SIZES) == ["512", "1K", "2K", "4K"]


def test_the_prompt_asks_for_the_ratio_and_size() -> None:
    text = image_prompt("a red fox", "16:9", "2K")
    assert "a red fox" in text and "Aspect ratio: 16:9" in text and "Image size: 2K" in text


@pytest.mark.parametrize(("ratio", "size"), [("7:3", None), ("1:1", "8K")])
def test_an_unknown_ratio_or_size_is_refused(ratio: str, size: str | None) -> None:
    with pytest.raises(InputError):
        image_prompt("x", ratio, size)


@pytest.mark.parametrize(
    ("data", "dims"),
    [
        (png(3, 2), (3, 2)),
        (jpeg(640, 480), (640, 480)),
        (webp(b"VP8X", b"\x00" * 4 + (1023).to_bytes(3, "little") + (575).to_bytes(3, "little")), (1024, 576)),
        (webp(b"VP8L", b"\x2f" + ((99) | (49 << 14)).to_bytes(4, "little")), (100, 50)),
        (webp(b"VP8 ", b"\x00" * 3 + b"\x9d\x01\x2a" + struct.pack("<HH", 320, 240)), (320, 240)),
        (b"GIF89a...", None),
    ],
)
def test_dimensions_are_read_from_png_jpeg_and_webp_headers(data: bytes, dims: tuple[int, int] | None) -> None:
    assert image_dimensions(data) == dims


@pytest.mark.parametrize(
    ("dims", "ratio", "size"),
    [
        ((1024, 1024), "1:1", "1K"),
        ((1344, 768), "16:9", "1K"),
        ((768, 1344), "9:16", None),
        ((4096, 4096), "1:1", "4K"),
    ],
)
def test_an_image_that_matches_the_request_earns_no_notice(dims: tuple[int, int], ratio: str, size: str | None) -> None:
    assert check_dimensions(dims, ratio, size) == []


def test_a_wrong_ratio_and_a_wrong_size_are_each_noticed() -> None:
    notices = check_dimensions((1024, 1024), "16:9", "4K")
    assert notices == [
        "aspectRatio 16:9 was asked for, but agy's image tool produced 1024×1024 (1:1).",
        "size 4K was asked for, but the image is 1024×1024 (about 1K).",
    ]


def test_unreadable_dimensions_are_noticed() -> None:
    assert "could not be read" in check_dimensions(None, "1:1", None)[0]


def test_the_newest_image_of_this_run_is_found_and_older_ones_are_not(tmp_path: Path) -> None:
    start = time.time()
    place(tmp_path, "old.png", png(1, 1), mtime=start - 3600)
    assert find_generated_image(tmp_path, CID, start) is None
    newer = place(tmp_path, "sub/generated_image_1.png", png(1, 1), mtime=start + 1)
    place(tmp_path, "notes.txt", b"x", mtime=start + 5)
    assert find_generated_image(tmp_path, CID, start) == newer.resolve()


def test_paths_outside_the_conversation_folder_are_never_picked(tmp_path: Path) -> None:
    start = time.time()
    outside = tmp_path / "secret.png"
    outside.write_bytes(png(1, 1))
    folder = tmp_path / "brain" / CID
    folder.mkdir(parents=True)
    (folder / "link.png").symlink_to(outside)
    assert find_generated_image(tmp_path, CID, start - 10, f"saved it to {outside}") is None
    assert find_generated_image(tmp_path, "other-conversation", start - 10) is None


def test_output_paths_inside_the_root_resolve_and_name_the_file(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    (root / "assets").mkdir(parents=True)
    source = Path("/x/generated_image_1.png")
    args = (source, tmp_path / "default", CID)
    assert resolve_output_path(root, "assets/hero.png", *args) == root.resolve() / "assets" / "hero.png"
    assert resolve_output_path(root, "assets", *args) == root.resolve() / "assets" / "generated_image_1.png"
    assert resolve_output_path(root, "new/", *args) == root.resolve() / "new" / "generated_image_1.png"
    assert resolve_output_path(root, "hero", *args) == root.resolve() / "hero.png"


@pytest.mark.parametrize("escape", ["../out.png", "/etc/out.png", "link/out.png", "assets/../../out.png"])
def test_output_paths_that_leave_the_root_are_refused(tmp_path: Path, escape: str) -> None:
    root = tmp_path / "proj"
    (root / "assets").mkdir(parents=True)
    (root / "link").symlink_to(tmp_path)
    with pytest.raises(InputError, match="outside the project root"):
        resolve_output_path(root, escape, Path("/x/a.png"), tmp_path / "default", CID)


def test_the_default_folder_never_overwrites(tmp_path: Path) -> None:
    default = tmp_path / "images"
    default.mkdir()
    (default / "agy-0f3e2d1c-a.png").write_bytes(b"")
    assert resolve_output_path(tmp_path, None, Path("/x/a.png"), default, CID) == default / "agy-0f3e2d1c-a-1.png"


def test_saving_copies_the_image_and_notes_a_format_the_name_hides(tmp_path: Path) -> None:
    state, root = tmp_path / "state", tmp_path / "proj"
    root.mkdir()
    place(state, "generated_image_1.png", png(16, 9), mtime=time.time())
    saved = save_generated_image(
        state_dir=state,
        conversation_id=CID,
        since=time.time() - 10,
        response_text="done",
        project_root=root,
        output_path="hero.jpg",
        default_dir=tmp_path / "default",
        aspect_ratio="16:9",
        size=None,
    )
    assert saved.path == root.resolve() / "hero.jpg" and saved.path.read_bytes() == png(16, 9)
    assert saved.dimensions == (16, 9)
    assert saved.notices == ["The image is PNG data; it was saved under the requested name hero.jpg."]


def test_a_run_that_left_no_image_fails_with_agys_answer_attached(tmp_path: Path) -> None:
    with pytest.raises(RunFailed, match="without leaving an image file") as caught:
        save_generated_image(
            state_dir=tmp_path,
            conversation_id=CID,
            since=time.time(),
            response_text="I cannot generate images.",
            project_root=tmp_path,
            output_path=None,
            default_dir=tmp_path,
            aspect_ratio="1:1",
            size=None,
        )
    assert caught.value.partial_text == "I cannot generate images."


async def generate(world: AgyWorld, ratio: str, size: str, output: str | None) -> tuple[Path, list[str]]:
    backend = world.backend()
    engine = RunEngine({BackendName("agy"): backend}, max_concurrent=1)
    prompt = image_prompt("a lighthouse [[agy:image]]", ratio, size)
    since = time.time()
    with anyio.fail_after(20):
        record = engine.new_record(RunSpec(tool="gemini-image", prompt=prompt, cwd=world.project), BackendName("agy"))
        await engine.execute(record)
        saved = await backend.save_image(record, ImageRequest(output, world.base / "out", ratio, size), since=since)
    assert saved.source.parent == (world.state_dir / "brain" / str(record.session_id)).resolve()
    return saved.path, saved.notices


@pytest.mark.anyio
async def test_the_fake_agys_image_is_found_and_copied_into_the_project(world: AgyWorld) -> None:
    path, notices = await generate(world, "16:9", "512", "assets/lighthouse.png")
    assert path == world.project.resolve() / "assets" / "lighthouse.png"
    assert image_dimensions(path.read_bytes()[:64]) == (683, 384) and notices == []


@pytest.mark.anyio
async def test_an_image_that_ignored_the_ratio_is_noticed(world: AgyWorld) -> None:
    world.install(image_dims="512x512")
    path, notices = await generate(world, "16:9", "512", None)
    assert path.parent == world.base / "out"
    assert notices == ["aspectRatio 16:9 was asked for, but agy's image tool produced 512×512 (1:1)."]
