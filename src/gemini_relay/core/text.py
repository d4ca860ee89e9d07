"""Text from upstream made safe to encode: a lone UTF-16 surrogate (JSON `\\ud800` without its pair) cannot be
written as UTF-8, and one of them used to kill the job supervisor mid-answer. It becomes U+FFFD, as undecodable
bytes already do."""

from __future__ import annotations

import re
from typing import Any

_SURROGATE = re.compile("[\ud800-\udfff]")


def replace_lone_surrogates(text: str) -> str:
    """`text` with every surrogate code point (only lone ones survive JSON decoding) replaced by U+FFFD."""
    return _SURROGATE.sub("\ufffd", text)


def scrub_strings(value: Any) -> Any:
    """`value` (decoded JSON) with replace_lone_surrogates applied to every string in it, keys included."""
    if isinstance(value, str):
        return replace_lone_surrogates(value)
    if isinstance(value, dict):
        return {scrub_strings(k): scrub_strings(v) for k, v in value.items()}  # pyright: ignore[reportUnknownVariableType]
    if isinstance(value, list):
        return [scrub_strings(v) for v in value]  # pyright: ignore[reportUnknownVariableType]
    return value
