"""Where generated media lands: unique files under the request's output folder, and interaction sidecars."""

from __future__ import annotations

import json
import re
import time
import uuid
from pathlib import Path
from typing import Any

from gemini_relay.backends.capabilities import GENERATED_SLUG_CHARS
from gemini_relay.core.trusted_files import write_file
from gemini_relay.errors import RunFailed

EXTENSIONS = {
    "image/png": ".png",
    "image/jpeg": ".jpg",
    "image/webp": ".webp",
    "video/mp4": ".mp4",
    "audio/mpeg": ".mp3",
    "audio/mp3": ".mp3",
    "audio/wav": ".wav",
    "audio/x-wav": ".wav",
}
_SLUG = re.compile(r"[^a-z0-9]+")
SLUG_MAX = GENERATED_SLUG_CHARS  # the naming gemini_relay.backends.capabilities.GENERATED_NAME_BYTES leaves room for


def latest_interaction(out_dir: Path) -> str | None:
    found = sidecars(out_dir)
    return str(found[0][1]["interaction_id"]) if found else None


def slug(text: str, limit: int = SLUG_MAX) -> str:
    return _SLUG.sub("-", text.lower()).strip("-")[:limit].strip("-") or "media"


def write_media(out_dir: Path, stem: str, data: bytes, mime_type: str, name: str | None = None) -> Path:
    """A new file `<date>-<stem>-<id><ext>` (never overwrites), or exactly `name` when the caller chose one; written
    whole before it is named, never through a link (`out_dir` is the realpath the tool layer jailed).

    Raises:
        RunFailed: the file could not be written (the generation itself is done, and billed).
    """
    ext = EXTENSIONS.get(mime_type.split(";", 1)[0].strip().lower(), ".bin")
    unique = f"{time.strftime('%Y%m%d-%H%M%S')}-{slug(stem)}-{uuid.uuid4().hex[:6]}{ext}"
    return _write(out_dir / (name or unique), data)


def write_sidecar(image: Path, record: dict[str, Any]) -> Path:
    """`<image>.json`: which interaction made the image, so a chain can be resumed or re-anchored later."""
    return _write(image.with_name(image.name + ".json"), json.dumps(record, indent=2).encode("utf-8"))


def _write(path: Path, data: bytes) -> Path:
    try:
        return write_file(path, data, jailed=True)
    except OSError as exc:
        raise RunFailed(
            f"gemini-api: the generated file could not be saved as {path}: {exc.strerror or exc}",
            recovery="Choose another output folder inside the project root and generate again.",
        ) from exc


def sidecars(out_dir: Path) -> list[tuple[Path, dict[str, Any]]]:
    """Every readable sidecar in the folder, newest first."""
    found: list[tuple[float, Path, dict[str, Any]]] = []
    for path in out_dir.glob("*.json"):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            mtime = path.stat().st_mtime
        except (OSError, ValueError):
            continue
        if isinstance(data, dict) and isinstance(data.get("interaction_id"), str):
            found.append((mtime, path, data))
    found.sort(key=lambda item: item[0], reverse=True)
    return [(p, d) for _, p, d in found]


def sidecar_for(out_dir: Path, interaction_id: str) -> tuple[Path, dict[str, Any]] | None:
    return next(((p, d) for p, d in sidecars(out_dir) if d.get("interaction_id") == interaction_id), None)
