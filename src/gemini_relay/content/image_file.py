"""A local image read once and checked as it is read: opened without following a final link and jailed on the
descriptor itself (jail.open_jailed), its type judged on its first bytes rather than its name. The bytes returned
are the bytes checked, so a caller that carries them never reads the path again."""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence

from gemini_relay.content.jail import OutsideRoots, open_jailed, read_prefix

__all__ = ["IMAGE_KINDS", "ImageRefused", "read_image", "sniff_image"]

IMAGE_KINDS = "PNG, JPEG, WebP or GIF"


class ImageRefused(Exception):  # noqa: N818 - a reason the caller words into its own field-named InputError
    """Why the file cannot be sent as an image; str() is the reason, a predicate for `<name> …`."""


def sniff_image(data: bytes) -> str | None:
    """The MIME type the content's magic bytes say, for the four types every image-taking backend accepts."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if data[:6] in (b"GIF87a", b"GIF89a"):
        return "image/gif"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


def read_image(real: str, real_roots: Sequence[str], limit: int) -> tuple[bytes, str]:
    """The bytes of the image at `real` (a realpath under one of `real_roots`) and their sniffed MIME type.

    Raises:
        ImageRefused: the file is outside the roots as opened (a link swapped in), unreadable, not a regular
            file, over `limit` bytes, or not a PNG, JPEG, WebP or GIF by its content.
    """
    try:
        fd = open_jailed(real, real_roots)
    except OutsideRoots:
        raise ImageRefused("resolves outside the allowed folders as opened (a link)") from None
    except OSError as exc:
        raise ImageRefused(f"cannot be read ({exc.strerror or type(exc).__name__})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ImageRefused("is not a regular file")
        if info.st_size > limit:
            raise ImageRefused(f"is larger than {limit} bytes")
        data = read_prefix(fd, limit + 1)
    except OSError as exc:
        raise ImageRefused(f"cannot be read ({exc.strerror or type(exc).__name__})") from None
    finally:
        os.close(fd)
    if len(data) > limit:
        raise ImageRefused(f"is larger than {limit} bytes")
    mime = sniff_image(data)
    if mime is None:
        raise ImageRefused(f"is not a {IMAGE_KINDS} image by its content (the file name does not decide)")
    return data, mime
