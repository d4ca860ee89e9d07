"""Coercions for fields of an upstream's JSON: a value of the wrong type reads as empty, never raises.

Every decoder reads untrusted, loosely specified JSON (agy's stream-json, the CLI's, ACP updates); one set of
coercions keeps them agreeing on what a missing or mistyped field means.
"""

from __future__ import annotations

from typing import Any


def as_str(value: object) -> str:
    return value if isinstance(value, str) else ""


def as_opt_str(value: object) -> str | None:
    """A non-empty string, else None."""
    return value if isinstance(value, str) and value else None


def as_int(value: object) -> int:
    """An int, else 0 (a bool is not a count)."""
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def as_dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}  # pyright: ignore[reportUnknownVariableType]


def as_list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []  # pyright: ignore[reportUnknownVariableType]
