"""Reference images as request parts, without burning context: small local files inline, large or repeated ones
through the Files API (uploaded once per path, mtime and size), `files/` uris checked and referenced as they are.

The upload cache lives in the state directory because every generation runs in its own job supervisor process;
"referenced twice in a session" therefore means twice while the upload is alive (~48 h, kept 47 h here).
"""

from __future__ import annotations

import contextlib
import json
import mimetypes
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gemini_relay.backends.api.auth import ApiAuth
from gemini_relay.backends.api.media import files_api as files
from gemini_relay.core.spec import MediaRef
from gemini_relay.core.trusted_files import OTHERS_WRITE, load_trusted_json, write_file
from gemini_relay.errors import InputError

INLINE_LIMIT = 6 * 1024 * 1024  # generateContent caps a whole request near 20 MB: larger images go by uri
UPLOAD_KEEP = 47 * 3600.0  # the Files API keeps an upload 48 h; a cached uri is not trusted past 47
CACHE_FILE = "media-uploads.json"


@dataclass(frozen=True)
class Resolved:
    """One reference, ready to send: inline bytes or a file uri (exactly one is set)."""

    mime_type: str
    data: bytes | None = None
    uri: str | None = None
    name: str | None = None  # files/<id>, for messages

    def rest_part(self) -> dict[str, Any]:
        """The Interactions API input item for this reference."""
        import base64  # noqa: PLC0415 - small, only here

        kind = self.mime_type.split("/", 1)[0]
        kind = kind if kind in ("image", "video", "audio") else "document"
        if self.data is not None:
            return {"type": kind, "mime_type": self.mime_type, "data": base64.b64encode(self.data).decode()}
        return {"type": kind, "mime_type": self.mime_type, "uri": self.uri}


class UploadCache:
    def __init__(self, state_dir: Path) -> None:
        self._path = state_dir / CACHE_FILE

    def _load(self) -> dict[str, dict[str, Any]]:
        data = load_trusted_json(self._path, what="the upload cache", mask=OTHERS_WRITE) or {}  # older: umask modes
        now = time.time()
        return {k: v for k, v in data.items() if isinstance(v, dict) and v.get("until", 0) > now}

    def _save(self, data: dict[str, dict[str, Any]]) -> None:
        write_file(self._path, json.dumps(data).encode("utf-8"), private=True)  # concurrent supervisors read it whole

    def seen(self, key: str) -> dict[str, Any] | None:
        return self._load().get(key)

    def record(self, key: str, entry: dict[str, Any]) -> None:
        data = self._load()
        data[key] = {**entry, "until": time.time() + UPLOAD_KEEP}
        with contextlib.suppress(OSError):  # a lost cache entry costs one more upload, never the generation
            self._save(data)


def mime_of(path: Path, given: str | None) -> str:
    return given or mimetypes.guess_type(path.name)[0] or "image/png"


def file_name(uri: str) -> str:
    """`files/<id>` from either that form or a full `https://…/v1beta/files/<id>` uri."""
    tail = uri.split("/files/", 1)[1] if "/files/" in uri else uri.removeprefix("files/")
    return "files/" + tail.split(":", 1)[0].split("?", 1)[0]


async def resolve(auth: ApiAuth, refs: tuple[MediaRef, ...], cache: UploadCache) -> list[Resolved]:
    out: list[Resolved] = []
    for ref in refs:
        if ref.kind == "file_uri":
            known = await files.get(auth, file_name(ref.value))  # an expired uri fails here, with its own message
            out.append(Resolved(ref.mime_type or known.mime_type, uri=known.uri, name=known.name))
        elif ref.kind == "path":
            out.append(await _local(auth, Path(ref.value), ref.mime_type, cache))
        else:
            raise InputError(f"unknown reference kind {ref.kind!r}")
    return out


async def _local(auth: ApiAuth, path: Path, given: str | None, cache: UploadCache) -> Resolved:
    try:
        stat = path.stat()
    except OSError as exc:
        raise InputError(f"reference image {path} cannot be read: {exc.strerror or exc}") from None
    mime = mime_of(path, given)
    key = f"{path}|{stat.st_mtime_ns}|{stat.st_size}"  # editing the file invalidates the cached upload
    entry = cache.seen(key)
    if entry is not None and entry.get("uri"):
        return Resolved(str(entry["mime_type"]), uri=str(entry["uri"]), name=str(entry["name"]))
    if stat.st_size > INLINE_LIMIT or entry is not None:  # large, or the second reference: upload once
        uploaded = await files.upload(auth, path, mime)
        cache.record(key, {"uri": uploaded.uri, "name": uploaded.name, "mime_type": uploaded.mime_type})
        return Resolved(uploaded.mime_type, uri=uploaded.uri, name=uploaded.name)
    cache.record(key, {})  # first sighting: inline now, upload if it comes again
    return Resolved(mime, data=path.read_bytes())
