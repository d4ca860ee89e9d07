"""Path arguments checked as text before anything touches the filesystem, so the OS never has to refuse them.

A NUL makes every os call raise ValueError and an over-long path raises ENAMETOOLONG; both used to surface as an
"internal error" from deep inside a run. Here they become a field-named validation error.
"""

from __future__ import annotations

from pydantic_core import PydanticCustomError

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
