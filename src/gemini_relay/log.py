"""Diagnostics on stderr with the [GMCPT] prefix; helpers that keep prompt bodies and secrets out of every line.

Every line is escaped (a control character shows as \\xNN: bytes from a request cannot move the terminal's cursor,
recolour it or forge a log line) and capped. Lines a request can cause, those of `requests_log` and every
library's, are rate-limited: the first FLOOD_LIMIT of one kind per FLOOD_WINDOW seconds are written, then one line
says how many were suppressed.
"""

from __future__ import annotations

import json
import logging
import re
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import PurePath
from typing import Any

PREFIX = "[GMCPT] "
logger = logging.getLogger("gemini_relay")
requests_log = logging.getLogger("gemini_relay.requests")  # what a client's request makes the relay say
MAX_LINE = 4000  # characters of one message; a traceback after it is escaped but not cut
SHOWN_MAX = 120  # characters of one value from a request (a Host header, an id)
FLOOD_LIMIT = 20
FLOOD_WINDOW = 60.0
# What counts as a flag name; any other argument (a prompt that starts with "-", say) is a value.
_FLAG_NAME = re.compile(r"--?[A-Za-z][A-Za-z0-9_-]*")
_ARGUMENT_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,63}")
# Besides C0 controls (tab aside): DEL, C1 controls, and the invisible characters that reorder or hide text.
_INVISIBLE = "\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff\ufff9-\ufffb"
_UNSAFE = re.compile(f"[\x00-\x08\x0a-\x1f{_INVISIBLE}]")
_UNSAFE_KEEP_NEWLINES = re.compile(f"[\x00-\x08\x0b-\x1f{_INVISIBLE}]")


def escape(text: str, *, keep_newlines: bool = False) -> str:
    """`text` with every control character written out: \\n, \\r, \\xNN, \\uNNNN (tabs stay)."""
    pattern = _UNSAFE_KEEP_NEWLINES if keep_newlines else _UNSAFE
    return pattern.sub(_written_out, text)


def _written_out(match: re.Match[str]) -> str:
    char = match.group()
    named = {"\n": "\\n", "\r": "\\r"}.get(char)
    if named is not None:
        return named
    return f"\\x{ord(char):02x}" if ord(char) < 0x100 else f"\\u{ord(char):04x}"


def shown(value: object, limit: int = SHOWN_MAX) -> str:
    """A value from a request, for a log line: a string quoted, escaped and cut at `limit` characters."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 64:
        return f"<integer of ~{int(value.bit_length() * 0.30103) + 1} digits>"  # str() refuses past 4,300
    if isinstance(value, str):
        quoted = value[:limit].replace("\\", "\\\\").replace('"', '\\"')
        text = f'"{escape(quoted)}"'
        return f"{text}…(+{len(value) - limit} chars)" if len(value) > limit else text
    return "null" if value is None else escape(repr(value))[:limit]


class _Stderr(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to whatever sys.stderr is at the time (as logging's last resort does)."""

    _gemini_relay = True

    def emit(self, record: logging.LogRecord) -> None:
        self.stream = sys.stderr
        super().emit(record)

    def close(self) -> None:  # at exit (logging.shutdown): the count of a flood still being suppressed
        for gate in self.filters:
            if isinstance(gate, FloodGate):
                gate.flush()
        super().close()


class SafeFormatter(logging.Formatter):
    """PREFIX + the message, escaped and capped; a traceback keeps its line breaks, escaped otherwise."""

    def __init__(self) -> None:
        super().__init__(PREFIX + "%(message)s")

    def format(self, record: logging.LogRecord) -> str:
        message = record.getMessage()
        if len(message) > MAX_LINE:
            message = f"{message[:MAX_LINE]}…(+{len(message) - MAX_LINE} chars)"
        record.message = escape(message)
        line = self.formatMessage(record)
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:
            line += "\n" + escape(record.exc_text, keep_newlines=True)
        if record.stack_info:
            line += "\n" + escape(self.formatStack(record.stack_info), keep_newlines=True)
        return line


class FloodGate(logging.Filter):
    """Per kind of line (where it is logged from: libraries format values into their messages), the first `limit`
    in each `window` seconds pass; the rest are counted, and one line per kind says how many were suppressed once
    the window is over."""

    def __init__(
        self,
        handler: logging.Handler,
        limit: int = FLOOD_LIMIT,
        window: float = FLOOD_WINDOW,
        clock: Callable[[], float] = time.monotonic,
        timers: bool = True,
    ) -> None:
        super().__init__()
        self._handler = handler
        self._limit = limit
        self._window = window
        self._clock = clock
        self._timers = timers
        self._lock = threading.RLock()
        self._start = clock()
        self._seen: dict[tuple[str, str, int], int] = {}
        self._first: dict[tuple[str, str, int], str] = {}  # the kind's message template, for its summary
        self._timer: threading.Timer | None = None

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "flood_summary", False) or not _gated(record.name):
            return True
        with self._lock:
            if self._clock() - self._start >= self._window:
                self.flush()
            key = (record.name, record.pathname, record.lineno)
            self._seen[key] = seen = self._seen.get(key, 0) + 1
            self._first.setdefault(key, str(record.msg))
            if seen == self._limit + 1 and self._timers and self._timer is None:
                self._timer = threading.Timer(max(0.0, self._start + self._window - self._clock()), self.flush)
                self._timer.daemon = True
                self._timer.start()
            return seen <= self._limit

    def flush(self) -> None:
        """One line per kind that was suppressed; a new window starts."""
        with self._lock:
            seen, first, self._seen, self._first = self._seen, self._first, {}, {}
            elapsed, self._start = self._clock() - self._start, self._clock()
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            for key, count in seen.items():
                if count > self._limit:
                    name, template = key[0], first[key]
                    summary = logging.LogRecord(
                        name, logging.WARNING, __file__, 0, "suppressed %d similar lines in %.0fs (%s)",
                        (count - self._limit, elapsed, template[:80]), None,
                    )  # fmt: skip
                    summary.flood_summary = True
                    self._handler.handle(summary)


def _gated(name: str) -> bool:
    return name == requests_log.name or not (name == logger.name or name.startswith(logger.name + "."))


def configure(level: int = logging.INFO) -> None:
    """Send the relay's log and every library's warnings to stderr; stdout belongs to the JSON-RPC stream."""
    if any(getattr(h, "_gemini_relay", False) for h in logger.handlers):
        return
    handler = _Stderr()
    handler.setFormatter(SafeFormatter())
    handler.addFilter(FloodGate(handler))
    logger.addHandler(handler)
    logger.setLevel(level)
    logger.propagate = False
    root = logging.getLogger()
    root.addHandler(handler)  # the SDK's and uvicorn's lines: escaped and rate-limited like ours
    root.setLevel(logging.WARNING)


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
    """`Tool gemini-ask(prompt=<412 chars> changeMode=true files=<array of 2>)`: no value's text is shown, whatever
    its JSON type (a prompt sent as an array is still a prompt); numbers, booleans and null are."""
    rendered: list[str] = []
    for key, value in (arguments or {}).items():
        name = key if isinstance(key, str) and _ARGUMENT_NAME.fullmatch(key) else f"<name of {len(str(key))} chars>"
        rendered.append(f"{name}={_reduced(value)}")
    return f"Tool {tool}({' '.join(rendered)})"


def _reduced(value: Any) -> str:
    if isinstance(value, str):
        return f"<{len(value)} chars>"
    if value is None or isinstance(value, bool):
        return json.dumps(value)
    if isinstance(value, int | float):
        return shown(value, limit=24)
    if isinstance(value, list | tuple):
        return f"<array of {len(value)}>"
    if isinstance(value, dict):
        return f"<object of {len(value)}>"
    return f"<{type(value).__name__}>"
