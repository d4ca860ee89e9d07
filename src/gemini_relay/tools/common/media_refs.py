"""Reference images for a generation, resolved before the job exists, cheapest for the caller's context first.

Local paths are realpath-jailed to the project root or GEMINI_RELAY_MEDIA_INPUT_DIR (a bare name is looked up in
the input folder first); `files/…` uris pass through; https URLs are fetched by the server under the SSRF rules of
content/fetch_image.py; base64 is the last resort. Fetched and base64 images are staged as files in the state dir,
so a job's spec stays small and the backend treats every local reference the same way (inline, or uploaded once).
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hashlib
import mimetypes
import os
import re
import stat
import time
from pathlib import Path
from typing import BinaryIO

from gemini_relay.content.fetch_image import MAX_IMAGE_BYTES, FetchedImage, fetch_image
from gemini_relay.content.image_file import IMAGE_KINDS, ImageRefused, read_image, sniff_image
from gemini_relay.content.jail import OutsideRoots, open_jailed
from gemini_relay.core.spec import MediaRef
from gemini_relay.core.trusted_files import read_trusted, write_file
from gemini_relay.errors import InputError
from gemini_relay.tools.common.media_config import MediaConfig

FILE_URI = re.compile(r"^(?:https://[^\s]+/)?files/[a-z0-9-]{1,64}$")
STAGING = "media-inputs"
MAX_REFERENCE_BYTES = 64 * 1024 * 1024  # a local reference image is read whole and staged: a bound on both
STAGED_KEEP = 7 * 24 * 3600.0  # a staged image unused for a week is removed when another is staged


def local_ref(raw: str, config: MediaConfig, field: str) -> MediaRef:
    """A local file by path, its type by name; what is read from it goes through open_local or local_image_ref."""
    path = _local_path(raw, config, field)
    return MediaRef("path", str(path), mimetypes.guess_type(path.name)[0])


def open_local(raw: str, config: MediaConfig, field: str) -> tuple[BinaryIO, MediaRef]:
    """The local file opened once and jailed on the descriptor (gemini-files upload sends from it, never by name),
    with its ref (type by name: an upload may be any file). The caller closes it."""
    ref = local_ref(raw, config, field)
    roots = [os.path.realpath(root) for root in config.input_roots()]
    try:
        fd = open_jailed(ref.value, roots)
    except OutsideRoots:
        raise InputError(f"{raw!r} resolves outside the allowed folders as opened (a link)", field=field) from None
    except OSError as exc:
        raise InputError(f"{raw!r} cannot be read ({exc.strerror or type(exc).__name__})", field=field) from None
    os.set_blocking(fd, True)  # opened O_NONBLOCK so a FIFO cannot hang the open; the SDK reads in blocking mode
    handle = open(fd, "rb")  # noqa: PTH123, SIM115 - a descriptor, not a path; the caller closes it
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        handle.close()
        raise InputError(f"{raw!r} is not a regular file", field=field)
    return handle, ref


def local_image_ref(raw: str, config: MediaConfig, field: str, state_dir: Path, limit: int) -> MediaRef:
    """A local image read now, once, jailed on the file as opened and typed by its content, then staged in the state
    dir: what the job sends later are these bytes, whatever the path names by then (a link swapped in while the
    call waits in the queue reaches nothing)."""
    path = _local_path(raw, config, field)
    roots = [os.path.realpath(root) for root in config.input_roots()]
    try:
        data, mime = read_image(str(path), roots, limit)
    except ImageRefused as exc:
        raise InputError(f"{raw!r} {exc}", field=field) from None
    return _stage(state_dir, data, mime)


def _local_path(raw: str, config: MediaConfig, field: str) -> Path:
    if "\x00" in raw or len(raw) > 4096:
        raise InputError("must be a file path (no NUL bytes, at most 4096 characters)", field=field)
    candidates = [Path(os.path.realpath(base / Path(raw).expanduser())) for base in config.input_roots()]
    for path in candidates:
        if not any(path == r or r in path.parents for r in config.input_roots()):
            continue
        if path.is_file():
            return path
    outside = all(not any(r in p.parents for r in config.input_roots()) for p in candidates)
    where = " or ".join(str(r) for r in config.input_roots())
    if outside:
        raise InputError(f"{raw!r} resolves outside {where}", field=field)
    raise InputError(f"{raw!r} is not a file under {where}", field=field)


def file_uri_ref(raw: str, field: str) -> MediaRef:
    value = raw.strip()
    if not FILE_URI.fullmatch(value):
        raise InputError(f"{raw!r} is not a Files API uri (files/<id>)", field=field)
    return MediaRef("file_uri", value)


def _stage(state_dir: Path, data: bytes, mime: str) -> MediaRef:
    ext = mimetypes.guess_extension(mime) or ".img"
    path = (
        state_dir / STAGING / f"{hashlib.sha256(data).hexdigest()[:32]}{ext}"
    )  # same bytes, same file: the upload cache hits
    if read_trusted(path, what="the staged reference image") != data:  # absent, or not ours alone: staged anew
        write_file(path, data, private=True)
    else:
        _used(path)
    _prune(path.parent)
    return MediaRef("path", str(path), mime)


def _used(path: Path) -> None:
    """Mark a staged file as used now by its access time; its mtime stays, the upload cache keys on it."""
    with contextlib.suppress(OSError):
        os.utime(path, ns=(time.time_ns(), path.stat().st_mtime_ns), follow_symlinks=False)


def _prune(folder: Path) -> None:
    """Staged files unused for STAGED_KEEP go (every local image is staged now): no queued job is that old."""
    limit = time.time() - STAGED_KEEP
    with contextlib.suppress(OSError), os.scandir(folder) as entries:
        for entry in entries:
            with contextlib.suppress(OSError):
                info = entry.stat(follow_symlinks=False)
                if entry.is_file(follow_symlinks=False) and max(info.st_atime, info.st_mtime) < limit:
                    Path(entry.path).unlink()


async def url_ref(url: str, state_dir: Path) -> MediaRef:
    """A fetched file as the server typed it (gemini-files upload); an image to send goes through url_image_ref."""
    fetched = await fetch_image(url)
    return _stage(state_dir, fetched.data, fetched.mime_type)


async def url_image_ref(url: str, state_dir: Path, field: str) -> MediaRef:
    return fetched_image_ref(await fetch_image(url), state_dir, field)


def fetched_image_ref(fetched: FetchedImage, state_dir: Path, field: str) -> MediaRef:
    """A fetched image typed by its content, as a local one is: the server's Content-Type does not decide."""
    mime = sniff_image(fetched.data)
    if mime is None:
        raise InputError(
            f"{fetched.url} is not a {IMAGE_KINDS} image by its content (the server said {fetched.mime_type})",
            field=field,
        )
    return _stage(state_dir, fetched.data, mime)


def base64_ref(raw: str, state_dir: Path, field: str) -> MediaRef:
    text = raw.strip()
    if text.startswith("data:") and "," in text:
        text = text.split(",", 1)[1]
    try:
        data = base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
    except (binascii.Error, ValueError):
        raise InputError("is not valid base64 (a truncated read is the usual cause)", field=field) from None
    if len(data) > MAX_IMAGE_BYTES:
        raise InputError(f"decodes to more than {MAX_IMAGE_BYTES} bytes", field=field)
    mime = sniff_image(data)
    if mime is None:
        raise InputError(f"does not decode to a {IMAGE_KINDS} image", field=field)
    return _stage(state_dir, data, mime)


async def gather(
    config: MediaConfig,
    state_dir: Path,
    *,
    paths: list[str] | None,
    file_uris: list[str] | None,
    urls: list[str] | None,
    base64_images: list[str] | None,
    prefix: str = "images",
) -> tuple[MediaRef, ...]:
    """Every reference in the order of their context cost (none first, base64 last); InputError names the field."""
    refs = [local_image_ref(p, config, prefix, state_dir, MAX_REFERENCE_BYTES) for p in paths or []]
    refs += [file_uri_ref(u, f"{prefix}FileUris") for u in file_uris or []]
    for url in urls or []:
        refs.append(await url_image_ref(url, state_dir, f"{prefix}Url"))
    refs += [base64_ref(b, state_dir, f"{prefix}Base64") for b in base64_images or []]
    return tuple(refs)
