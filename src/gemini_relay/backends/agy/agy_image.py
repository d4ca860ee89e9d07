"""gemini-image on agy: the prompt for agy's image tool, the generated file in the run's conversation folder
(`~/.gemini/antigravity-cli/brain/<conversation>/`, agy.md §6.3), and its copy to a path jailed to the project root.

agy has no flags for aspect ratio or size, so both go into the prompt and the result is measured: a mismatch is a
notice, never silent. Pure functions plus small, blocking file I/O (call `save_generated_image` off the event loop).
"""

from __future__ import annotations

import math
import os
import re
import struct
from pathlib import Path

from gemini_relay.backends.capabilities import IMAGE_SUFFIXES, SavedImage
from gemini_relay.core.trusted_files import write_file
from gemini_relay.errors import InputError, RunFailed

ASPECT_RATIOS = ("1:1", "16:9", "9:16", "4:3", "3:4", "3:2", "2:3", "5:4", "4:5", "21:9", "4:1", "1:4", "8:1", "1:8")
SIZES = {"512": 512, "1K": 1024, "2K": 2048, "4K": 4096}
SAVED_NAME_BYTES = 96  # `agy-<id>-<agy's file name>`: agy names its files `generated_image_<n>.png` and the like
RATIO_TOLERANCE = 0.04  # image models round each side to a multiple of 8-64 px
SIZE_TOLERANCE = 0.25  # sizes are pixel-count classes (1K at 16:9 is 1344x768), not exact sides
MTIME_SLACK = 2.0  # coarse filesystem timestamps: a file written at the run's start may look slightly older
_PATH_IN_TEXT = re.compile(r"(?:file://)?(/[^\s\"'`<>()\[\]]+\.(?:png|jpe?g|webp))", re.IGNORECASE)
_SUFFIXES = {"png": (".png",), "jpeg": (".jpg", ".jpeg"), "webp": (".webp",)}


def image_prompt(prompt: str, aspect_ratio: str, size: str | None) -> str:
    """The instruction for agy's image tool. Raises InputError for a ratio or size agy's image model does not make."""
    if aspect_ratio not in ASPECT_RATIOS:
        raise InputError(f"aspectRatio must be one of {', '.join(ASPECT_RATIOS)}")
    if size is not None and size not in SIZES:
        raise InputError(f"size must be one of {', '.join(SIZES)}")
    lines = [
        "Use your image generation tool to create one image file. Do not describe the image instead of creating it.",
        f"Image description: {prompt.strip()}",
        f"Aspect ratio: {aspect_ratio}",
    ]
    if size is not None:
        lines.append(f"Image size: {size} (about {SIZES[size]} px on a side)")
    lines.append("When it is saved, reply with the image file's absolute path.")
    return "\n".join(lines)


def find_generated_image(state_dir: Path, conversation_id: str, since: float, response_text: str = "") -> Path | None:
    """The newest image in the run's conversation folder written at or after `since` (wall-clock seconds).

    Paths named in the answer count only when they lie inside that folder: a model cannot make the relay copy an
    arbitrary file into the project.
    """
    folder = state_dir / "brain" / conversation_id
    try:
        real_folder = folder.resolve(strict=True)
    except OSError:
        return None
    candidates = [p for p in real_folder.rglob("*") if p.suffix.lower() in IMAGE_SUFFIXES]
    candidates += [Path(m) for m in _PATH_IN_TEXT.findall(response_text)]
    best: tuple[float, Path] | None = None
    for candidate in candidates:
        try:
            real = candidate.resolve(strict=True)
            mtime = real.stat().st_mtime
        except OSError:
            continue
        if not real.is_file() or real_folder not in real.parents or mtime < since - MTIME_SLACK:
            continue
        if best is None or mtime > best[0]:
            best = (mtime, real)
    return best[1] if best else None


def image_format(head: bytes) -> str | None:
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "png"
    if head.startswith(b"\xff\xd8"):
        return "jpeg"
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "webp"
    return None


def image_dimensions(data: bytes) -> tuple[int, int] | None:
    """(width, height) from a PNG, JPEG or WebP header, or None when the bytes are not one of those."""
    kind = image_format(data)
    if kind == "png" and len(data) >= 24:
        width, height = struct.unpack(">II", data[16:24])
        return int(width), int(height)
    if kind == "jpeg":
        return _jpeg_dimensions(data)
    if kind == "webp":
        return _webp_dimensions(data)
    return None


def check_dimensions(dimensions: tuple[int, int] | None, aspect_ratio: str, size: str | None) -> list[str]:
    """Notices for each requested property the produced image does not have."""
    if dimensions is None:
        return ["The image's dimensions could not be read, so its aspect ratio and size were not checked."]
    width, height = dimensions
    if width <= 0 or height <= 0:
        return [f"The image reports impossible dimensions {width}×{height}."]
    notices: list[str] = []
    a, b = (int(x) for x in aspect_ratio.split(":"))
    if abs((width / height) / (a / b) - 1) > RATIO_TOLERANCE:
        notices.append(
            f"aspectRatio {aspect_ratio} was asked for, but agy's image tool produced {width}×{height} "
            f"({_ratio(width, height)})."
        )
    if size is not None:
        side = math.sqrt(width * height)
        if abs(side / SIZES[size] - 1) > SIZE_TOLERANCE:
            nearest = min(SIZES, key=lambda k: abs(SIZES[k] - side))
            notices.append(f"size {size} was asked for, but the image is {width}×{height} (about {nearest}).")
    return notices


def resolve_output_path(
    project_root: Path, output_path: str | None, source: Path, default_dir: Path, conversation_id: str
) -> Path:
    """Where the copy goes. An outputPath is jailed to the project root after resolving symlinks (realpath) in its
    folder; a link at the final name is replaced by the copy, never followed.

    Raises:
        InputError: outputPath leaves the project root.
    """
    if output_path is None or not output_path.strip():
        return _unique(default_dir / f"agy-{conversation_id[:8]}-{source.name}")
    root = project_root.resolve()
    raw = output_path.strip()
    target = Path(raw).expanduser()
    target = target if target.is_absolute() else root / target
    if raw.endswith(("/", "\\")) or target.is_dir():
        target = target / source.name
    elif target.suffix.lower() not in IMAGE_SUFFIXES:
        target = target.with_name(target.name + source.suffix)
    real = Path(os.path.realpath(target.parent)) / target.name
    if root not in real.parents:
        raise InputError(f"outputPath {raw!r} resolves outside the project root ({root}); the image was not copied.")
    return real


def save_generated_image(
    *,
    state_dir: Path,
    conversation_id: str | None,
    since: float,
    response_text: str,
    project_root: Path,
    output_path: str | None,
    default_dir: Path,
    aspect_ratio: str,
    size: str | None,
) -> SavedImage:
    """Find the run's image, copy it, and say how it differs from what was asked.

    Raises:
        RunFailed: agy finished without leaving an image file for this run.
        InputError: outputPath leaves the project root.
    """
    source = find_generated_image(state_dir, conversation_id, since, response_text) if conversation_id else None
    if source is None or conversation_id is None:
        where = state_dir / "brain" / (conversation_id or "<no conversation id>")
        raise RunFailed(
            f"agy finished without leaving an image file in {where}; its image tool may be unavailable for this "
            "account or model. agy's answer is attached.",
            partial_text=response_text,
        )
    target = resolve_output_path(project_root, output_path, source, default_dir, conversation_id)
    data = source.read_bytes()
    dimensions = image_dimensions(data)
    notices = check_dimensions(dimensions, aspect_ratio, size)
    kind = image_format(data[:16])
    if kind is not None and target.suffix.lower() not in _SUFFIXES[kind]:
        notices.append(f"The image is {kind.upper()} data; it was saved under the requested name {target.name}.")
    try:
        write_file(target, data, jailed=True)
    except OSError as exc:
        raise RunFailed(
            f"agy made the image {source}, but it could not be copied to {target}: {exc.strerror or exc}",
            partial_text=response_text,
        ) from exc
    return SavedImage(target, source, dimensions, notices)


def _unique(path: Path) -> Path:
    candidate, n = path, 1
    while candidate.exists():
        candidate = path.with_name(f"{path.stem}-{n}{path.suffix}")
        n += 1
    return candidate


def _ratio(width: int, height: int) -> str:
    divisor = math.gcd(width, height)
    return f"{width // divisor}:{height // divisor}"


def _jpeg_dimensions(data: bytes) -> tuple[int, int] | None:
    i = 2
    while i + 9 < len(data):
        if data[i] != 0xFF:
            return None
        marker = data[i + 1]
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:
            i += 2
            continue
        length = struct.unpack(">H", data[i + 2 : i + 4])[0]
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            height, width = struct.unpack(">HH", data[i + 5 : i + 9])
            return int(width), int(height)
        i += 2 + length
    return None


def _webp_dimensions(data: bytes) -> tuple[int, int] | None:
    chunk = data[12:16]
    if chunk == b"VP8 " and len(data) >= 30:
        width, height = struct.unpack("<HH", data[26:30])
        return int(width) & 0x3FFF, int(height) & 0x3FFF
    if chunk == b"VP8L" and len(data) >= 25:
        bits = int.from_bytes(data[21:25], "little")
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if chunk == b"VP8X" and len(data) >= 30:
        return int.from_bytes(data[24:27], "little") + 1, int.from_bytes(data[27:30], "little") + 1
    return None
