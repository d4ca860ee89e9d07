"""Path arguments checked as text before anything touches the filesystem, so the OS never has to refuse them.

A NUL makes every os call raise ValueError and an over-long path raises ENAMETOOLONG; both used to surface as an
"internal error" from deep inside a run. Here they become a field-named validation error.
"""

from __future__ import annotations

import os
from pathlib import Path

from pydantic_core import PydanticCustomError

from gemini_relay.errors import InputError

PATH_MAX = 4096  # Linux PATH_MAX, in bytes, including the root the relative path is joined to
NAME_MAX = 255  # one path component, in bytes


def check_path_text(value: str) -> str:
    """The value unchanged, or a PydanticCustomError saying what the OS would refuse."""
    if "\x00" in value:
        raise PydanticCustomError("path_nul", "a path cannot contain a NUL byte")
    size = len(value.encode("utf-8", "surrogatepass"))
    if size > PATH_MAX:
        raise PydanticCustomError(
            "path_too_long", "the path is {size} bytes; the limit is {limit}", {"size": size, "limit": PATH_MAX}
        )
    longest = max(
        (len(part.encode("utf-8", "surrogatepass")) for part in value.replace("\\", "/").split("/")), default=0
    )
    if longest > NAME_MAX:
        raise PydanticCustomError(
            "path_name_too_long",
            "a path component is {size} bytes; the limit is {limit}",
            {"size": longest, "limit": NAME_MAX},
        )
    return value


def check_destination(folder: Path, name: str | None, field: str, *, room: int = 0) -> None:
    """Refuse, naming `field`, a file the OS could not create: `name` (None: one the relay makes up) in `folder`,
    with `room` more bytes still to come (a suffix, a generated name). Checked before anything is generated: a
    name that only fails when the result is saved has already been billed.

    Raises:
        InputError: the final name passes NAME_MAX, or the final path PATH_MAX.
    """
    size = (len(os.fsencode(name)) if name else 0) + room
    if name is not None and size > NAME_MAX:
        more = f" once the relay adds its {room}-byte suffix" if room else ""
        raise InputError(f"the file name is {size} bytes{more}; the limit is {NAME_MAX}", field=field)
    total = len(os.fsencode(folder)) + 1 + size
    if total >= PATH_MAX:
        raise InputError(
            f"the file would be saved at a path of {total} bytes; the limit is {PATH_MAX - 1} (PATH_MAX {PATH_MAX})",
            field=field,
        )
