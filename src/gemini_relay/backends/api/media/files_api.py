"""The Files API through google-genai: upload (resumable), list, get and delete; uploads are kept ~48 h."""

from __future__ import annotations

import io
from pathlib import Path
from typing import BinaryIO, cast

from google.genai import errors as genai_errors
from google.genai import types

from gemini_relay.backends.api.auth import ApiAuth
from gemini_relay.backends.api.media.errors import MediaApiError, expired_file, from_media_error
from gemini_relay.backends.capabilities import StoredFile
from gemini_relay.errors import RunFailed


def _uploaded(f: types.File) -> StoredFile:
    return StoredFile(
        name=f.name or "",
        uri=f.uri or "",
        mime_type=f.mime_type or "application/octet-stream",
        size_bytes=f.size_bytes,
        expires=f.expiration_time.isoformat() if f.expiration_time else None,
        display_name=f.display_name,
    )


def _failure(exc: genai_errors.APIError, name: str | None = None) -> RunFailed:
    code = int(exc.code) if isinstance(exc.code, int) else 0
    message = str(exc.message or exc)
    if name and code in (403, 404):
        return expired_file([name], message, code)
    return from_media_error(MediaApiError(code, str(exc.status or ""), message), model=None, file_uris=[])


async def upload(auth: ApiAuth, source: Path | BinaryIO, mime_type: str, display_name: str | None = None) -> StoredFile:
    """Upload by path, or from an open binary file (read from where it is, never reopened by name)."""
    client = auth.client()
    file: str | BinaryIO = str(source) if isinstance(source, Path) else source
    name = display_name or (source.name if isinstance(source, Path) else None)
    try:
        uploaded = await client.aio.files.upload(
            file=cast("io.IOBase | str", file), config=types.UploadFileConfig(mime_type=mime_type, display_name=name)
        )
    except genai_errors.APIError as exc:
        raise _failure(exc) from exc
    finally:
        await client.aio.aclose()
    return _uploaded(uploaded)


async def get(auth: ApiAuth, name: str) -> StoredFile:
    """The file's record; RunFailed with the expired-file message when it is gone (or never existed)."""
    client = auth.client()
    try:
        return _uploaded(await client.aio.files.get(name=name))
    except genai_errors.APIError as exc:
        raise _failure(exc, name) from exc
    finally:
        await client.aio.aclose()


async def list_files(auth: ApiAuth, limit: int) -> list[StoredFile]:
    client = auth.client()
    found: list[StoredFile] = []
    try:
        pager = await client.aio.files.list(config=types.ListFilesConfig(page_size=min(limit, 100)))
        async for f in pager:
            found.append(_uploaded(f))
            if len(found) >= limit:
                break
    except genai_errors.APIError as exc:
        raise _failure(exc) from exc
    finally:
        await client.aio.aclose()
    return found


async def delete(auth: ApiAuth, name: str) -> None:
    client = auth.client()
    try:
        await client.aio.files.delete(name=name)
    except genai_errors.APIError as exc:
        raise _failure(exc, name) from exc
    finally:
        await client.aio.aclose()
