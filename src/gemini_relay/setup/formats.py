"""Each client file format, read and edited: JSON objects with a servers key here, Codex's TOML in codex_format.py.

JSON is parsed and written back with the file's own indentation, and nothing in it may change on the way through:
a number is kept as its literal text (`1e400` stays `1e400`; read as a float it would come back as `Infinity`, which
Node refuses), and a file that cannot come back as it was is refused with the reason (a lone surrogate `"\\ud800"`
has no UTF-8 form; a key twice in one object would lose one; `NaN` is not JSON). Every edit is parsed back before it
may be written.
"""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NoReturn, Protocol

from gemini_relay.setup.entries import Entry

Shape = Callable[..., dict[str, Any]]
_INDENT = re.compile(r"^([ \t]+)\S", re.MULTILINE)
_SURROGATE = re.compile("[\ud800-\udfff]")


class FormatError(Exception):
    """The file cannot be read (or safely edited) in its client's format: nothing is written to it."""


class Format(Protocol):
    def parse(self, text: str | None) -> dict[str, Any]: ...
    def get(self, data: Mapping[str, Any], name: str) -> object | None: ...
    def want(self, entry: Entry) -> object: ...
    def known(self, entry: Entry) -> list[object]:
        """Every value setup writes for this entry, whatever the options (Codex: either approval)."""
        ...

    def show(self, entry: Entry) -> str: ...
    def add(self, text: str | None, data: Mapping[str, Any], entries: Sequence[Entry]) -> tuple[str, dict[str, str]]:
        """The new text, and for each entry the text that undoing it takes out again (empty: none recorded)."""
        ...

    def remove(self, text: str, data: Mapping[str, Any], names: Sequence[str], added: Mapping[str, str]) -> str: ...


class Number(str):
    """A JSON number as the file wrote it, so that it is written back exactly so."""


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    data: dict[str, Any] = {}
    for key, value in pairs:
        if key in data:
            raise FormatError(f"it holds the key {json.dumps(key)} twice in one object (a rewrite would drop one)")
        data[key] = value
    return data


def _constant(name: str) -> NoReturn:
    raise FormatError(f"it holds {name}, which is not JSON")


def _check_strings(data: object) -> None:
    """Refuse a string (or key) with a lone surrogate: json reads `"\\ud800"`, but no UTF-8 can write it back."""
    stack = [data]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            stack += [*value.keys(), *value.values()]
        elif isinstance(value, list):
            stack += value
        elif isinstance(value, str) and not isinstance(value, Number):
            found = _SURROGATE.search(value)
            if found:
                code = f"\\u{ord(found.group()):04x}"
                raise FormatError(f"a string in it holds a lone surrogate ({code}), which cannot be written as UTF-8")


class JsonFormat:
    """A JSON object whose `key` maps server names to entries (`mcpServers`, or VS Code's `servers`)."""

    def __init__(self, key: str, shape: Shape) -> None:
        self.key = key
        self.shape = shape

    def parse(self, text: str | None) -> dict[str, Any]:
        if text is None or not text.strip():
            return {}
        try:
            data = json.loads(
                text, parse_float=Number, parse_int=Number, parse_constant=_constant, object_pairs_hook=_pairs
            )
        except ValueError as exc:
            raise FormatError(f"it is not plain JSON ({exc}; comments or trailing commas are not read)") from None
        except RecursionError:
            raise FormatError("it is nested too deeply to read") from None
        if not isinstance(data, dict):
            raise FormatError("it is not a JSON object")
        servers = data.get(self.key)
        if servers is not None and not isinstance(servers, dict):
            raise FormatError(f'its "{self.key}" is not an object')
        _check_strings(data)
        return data

    def get(self, data: Mapping[str, Any], name: str) -> object | None:
        servers: dict[str, Any] = data.get(self.key) or {}
        return servers.get(name)

    def want(self, entry: Entry) -> object:
        return self.shape(entry, shown=True)

    def known(self, entry: Entry) -> list[object]:
        return [self.want(entry)]

    def show(self, entry: Entry) -> str:
        return json.dumps({self.key: {entry.name: self.shape(entry, shown=False)}}, indent=2, ensure_ascii=False)

    def add(self, text: str | None, data: Mapping[str, Any], entries: Sequence[Entry]) -> tuple[str, dict[str, str]]:
        new = dict(data)
        servers = dict(new.get(self.key) or {})
        for entry in entries:
            servers[entry.name] = self.want(entry)
        new[self.key] = servers
        return self._dump(new, text), {entry.name: "" for entry in entries}

    def remove(self, text: str, data: Mapping[str, Any], names: Sequence[str], added: Mapping[str, str]) -> str:
        new = dict(data)
        new[self.key] = {k: v for k, v in (new.get(self.key) or {}).items() if k not in names}
        return self._dump(new, text)

    @staticmethod
    def _dump(data: Mapping[str, Any], like: str | None) -> str:
        """`data` laid out like the file was: its indentation, its final newline (a new file: 2 spaces, newline),
        each number as the file wrote it (it goes out as a unique placeholder string, then back to its text)."""
        indent: str | None = "  "
        if like and like.strip():
            found = _INDENT.search(like)
            indent = found.group(1) if found else None
        nonce = secrets.token_hex(8)
        literals: list[str] = []

        def mark(value: object) -> object:
            if isinstance(value, Number):
                literals.append(str(value))
                return f"{nonce}:{len(literals) - 1}"
            if isinstance(value, dict):
                return {k: mark(v) for k, v in value.items()}
            if isinstance(value, list):
                return [mark(v) for v in value]
            return value

        out = json.dumps(mark(data), indent=indent, ensure_ascii=False)
        out = re.sub(f'"{nonce}:([0-9]+)"', lambda found: literals[int(found.group(1))], out)
        return out + "\n" if not like or like.endswith("\n") else out
