"""Diagnostics on stderr with the [GMCPT] prefix; helpers that keep prompt bodies and secrets out of every line."""

from __future__ import annotations

import json
import logging
import re
import sys
from collections.abc import Mapping, Sequence
from pathlib import PurePath
from typing import Any

PREFIX = "[GMCPT] "
logger = logging.getLogger("gemini_relay")
# What counts as a flag name; any other argument (a prompt that starts with "-", say) is a value.
_FLAG_NAME = re.compile(r"--?[A-Za-z][A-Za-z0-9_-]*")


def configure(level: int = logging.INFO) -> None:
    """Send the relay's log to stderr; stdout belongs to the JSON-RPC stream."""
    if any(getattr(h, "_gemini_relay", False) for h in logger.handlers):
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(PREFIX + "%(message)s"))
    handler._gemini_relay = True  # type: ignore[attr-defined]
    logger.addHandler(handler)
    logger.setLevel(level)
    logger.propagate = False


def redact_argv(argv: Sequence[str]) -> str:
    """`gemini --output-format <11 chars> -m <14 chars>`: flag names kept, every value reduced to its length."""
    if not argv:
        return ""
    parts = [PurePath(argv[0]).name]
    for arg in argv[1:]:
        name = arg.split("=", 1)[0]
        if _FLAG_NAME.fullmatch(name):
            parts.append(name if name == arg else f"{name}=<{len(arg) - len(name) - 1} chars>")
        else:
            parts.append(f"<{len(arg)} chars>")
    return " ".join(parts)


def describe_call(tool: str, arguments: Mapping[str, Any] | None) -> str:
    """`Tool gemini-ask(prompt=<412 chars> changeMode=true)`: strings reduced to their length, the rest whole."""
    rendered: list[str] = []
    for key, value in (arguments or {}).items():
        if isinstance(value, str):
            rendered.append(f"{key}=<{len(value)} chars>")
        else:
            rendered.append(f"{key}={_json(value)}")
    return f"Tool {tool}({' '.join(rendered)})"


def _json(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError):
        return f"<{type(value).__name__}>"
