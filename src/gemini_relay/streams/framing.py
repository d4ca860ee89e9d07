"""Incremental NDJSON framing: byte chunks in, complete text lines out, with a per-line size guard."""

from __future__ import annotations

import json
import re
from typing import Any

from gemini_relay.core.events import AgentEvent
from gemini_relay.core.text import scrub_strings

# A `\ud800`-`\udfff` escape: the only way a lone surrogate gets into decoded text (raw bytes are replaced).
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")

# agy's init line carries the whole tool list; 8 MiB bounds one line without refusing real output.
MAX_LINE_BYTES = 8 * 1024 * 1024


class LineFramer:
    """Turns arbitrary byte chunks into lines. Lines over MAX_LINE_BYTES are dropped and counted."""

    def __init__(self, max_line_bytes: int = MAX_LINE_BYTES) -> None:
        self._buf = bytearray()
        self._max = max_line_bytes
        self._discarding = False
        self.dropped = 0

    def push(self, chunk: bytes) -> list[str]:
        lines: list[str] = []
        start = 0
        while True:
            nl = chunk.find(b"\n", start)
            if nl < 0:
                self._append(chunk[start:])
                return lines
            self._append(chunk[start:nl])
            if self._discarding:
                self._discarding = False
            else:
                lines.append(self._take())
            start = nl + 1

    @property
    def pending(self) -> int:
        """Bytes of a line not yet ended by a newline."""
        return len(self._buf)

    def flush(self) -> list[str]:
        """The final line when the stream ended without a newline."""
        if self._discarding:
            self._discarding = False
            return []
        if not self._buf:
            return []
        return [self._take()]

    def _append(self, data: bytes) -> None:
        if self._discarding or not data:
            return
        if len(self._buf) + len(data) > self._max:
            self._buf.clear()
            self._discarding = True
            self.dropped += 1
            return
        self._buf.extend(data)

    def _take(self) -> str:
        text = self._buf.decode("utf-8", errors="replace").rstrip("\r")
        self._buf.clear()
        return text


def parse_json_line(line: str) -> dict[str, Any] | None:
    """A JSON object from one line, or None for blanks and non-JSON noise (CLIs print warnings on stdout)."""
    stripped = line.strip()
    if not stripped.startswith("{"):
        return None
    try:
        value = json.loads(stripped)
    except ValueError:
        return None
    if not isinstance(value, dict):
        return None
    if _SURROGATE_ESCAPE.search(stripped):  # rare: only then walk the object
        scrubbed: dict[str, Any] = scrub_strings(value)
        return scrubbed
    return value


class NdjsonDecoder:
    """Base of the CLI stream decoders: frames bytes into lines, skips blanks, counts unusable lines.

    Subclasses map one JSON object to events in `_object`.
    """

    def __init__(self) -> None:
        self._framer = LineFramer()
        self._invalid = 0

    @property
    def skipped(self) -> int:
        """Lines that could not be used: not JSON objects, or longer than the framer's limit."""
        return self._invalid + self._framer.dropped

    def push(self, chunk: bytes) -> list[AgentEvent]:
        return self._lines(self._framer.push(chunk))

    def flush(self) -> list[AgentEvent]:
        return self._lines(self._framer.flush())

    def _lines(self, lines: list[str]) -> list[AgentEvent]:
        events: list[AgentEvent] = []
        for line in lines:
            if not line.strip():
                continue
            obj = parse_json_line(line)
            if obj is None:
                self._invalid += 1
                continue
            events.extend(self._object(obj))
        return events

    def _object(self, obj: dict[str, Any]) -> list[AgentEvent]:
        raise NotImplementedError
