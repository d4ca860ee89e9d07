"""Each client file format, read and edited as text: JSON objects with a servers key, and Codex's TOML.

JSON is parsed and written back with the file's own indentation. TOML is never re-serialized: an entry is a block
of text appended at the end (and recorded), and undoing it takes exactly that text out again, so the rest of the
user's file, comments and order included, is untouched. Every edit is parsed back before it may be written.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from gemini_relay.setup.entries import APPROVALS, MARK, REQUIRED, Entry, codex_block

Shape = Callable[..., dict[str, Any]]
_INDENT = re.compile(r"^([ \t]+)\S", re.MULTILINE)


class FormatError(Exception):
    """The file cannot be read (or safely edited) in its client's format: nothing is written to it."""


class Format(Protocol):
    def parse(self, text: str | None) -> dict[str, Any]: ...
    def get(self, data: Mapping[str, Any], name: str) -> object | None: ...
    def want(self, entry: Entry) -> object: ...
    def show(self, entry: Entry) -> str: ...
    def add(self, text: str | None, data: Mapping[str, Any], entries: Sequence[Entry]) -> tuple[str, dict[str, str]]:
        """The new text, and for each entry the text that undoing it takes out again (empty: none recorded)."""
        ...

    def remove(self, text: str, data: Mapping[str, Any], names: Sequence[str], added: Mapping[str, str]) -> str: ...


class JsonFormat:
    """A JSON object whose `key` maps server names to entries (`mcpServers`, or VS Code's `servers`)."""

    def __init__(self, key: str, shape: Shape) -> None:
        self.key = key
        self.shape = shape

    def parse(self, text: str | None) -> dict[str, Any]:
        if text is None or not text.strip():
            return {}
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise FormatError(f"it is not plain JSON ({exc}; comments or trailing commas are not read)") from None
        if not isinstance(data, dict):
            raise FormatError("it is not a JSON object")
        servers = data.get(self.key)
        if servers is not None and not isinstance(servers, dict):
            raise FormatError(f'its "{self.key}" is not an object')
        return data

    def get(self, data: Mapping[str, Any], name: str) -> object | None:
        servers: dict[str, Any] = data.get(self.key) or {}
        return servers.get(name)

    def want(self, entry: Entry) -> object:
        return self.shape(entry, shown=True)

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
        """`data` laid out like the file was: its indentation, its final newline (a new file: 2 spaces, newline)."""
        indent: str | None = "  "
        if like and like.strip():
            found = _INDENT.search(like)
            indent = found.group(1) if found else None
        out = json.dumps(data, indent=indent, ensure_ascii=False)
        return out + "\n" if not like or like.endswith("\n") else out


class CodexFormat:
    """`~/.codex/config.toml`: `[mcp_servers.<name>]` tables, with `[mcp_servers.<name>.tools.<tool>]` approvals."""

    def __init__(self, approved: Sequence[str]) -> None:
        self.approved = list(approved)

    def parse(self, text: str | None) -> dict[str, Any]:
        try:
            data = tomllib.loads(text or "")
        except tomllib.TOMLDecodeError as exc:
            raise FormatError(f"it is not valid TOML ({exc})") from None
        if not isinstance(data.get("mcp_servers", {}), dict):
            raise FormatError("its mcp_servers is not a table")
        return data

    def get(self, data: Mapping[str, Any], name: str) -> object | None:
        servers: dict[str, Any] = data.get("mcp_servers") or {}
        return servers.get(name)

    def want(self, entry: Entry) -> object:
        return tomllib.loads(codex_block(entry, self.approved, shown=True))["mcp_servers"][entry.name]

    def show(self, entry: Entry) -> str:
        return codex_block(entry, self.approved, shown=False).rstrip("\n")

    def add(self, text: str | None, data: Mapping[str, Any], entries: Sequence[Entry]) -> tuple[str, dict[str, str]]:
        current = text or ""
        added: dict[str, str] = {}
        for entry in entries:
            if self.get(data, entry.name) is not None:
                current = drop_table(current, entry.name)  # --force: the user's table goes (the backup keeps it)
            separator = "" if not current else "\n" if current.endswith("\n") else "\n\n"
            added[entry.name] = separator + codex_block(entry, self.approved, shown=True)
            current += added[entry.name]
        parsed = self.parse(current)
        for entry in entries:
            if self.get(parsed, entry.name) != self.want(entry):
                raise FormatError(f"[mcp_servers.{entry.name}] would not read back as written (dotted keys?)")
        return current, added

    def remove(self, text: str, data: Mapping[str, Any], names: Sequence[str], added: Mapping[str, str]) -> str:
        current = text
        for name in names:
            chunk = added.get(name, "")
            at = current.rfind(chunk) if chunk else -1
            current = current[:at] + current[at + len(chunk) :] if at >= 0 else drop_table(current, name)
        parsed = self.parse(current)
        left = [name for name in names if self.get(parsed, name) is not None]
        if left:
            raise FormatError(f"[mcp_servers.{left[0]}] is not a table setup can take out as text")
        return current


_HEADER = re.compile(r"^\s*\[\[?(?P<keys>[^\]\[]+)\]\]?\s*(#.*)?$")
_KEY = re.compile(r'\s*(?:(?P<bare>[A-Za-z0-9_-]+)|(?P<basic>"(?:[^"\\]|\\.)*")|\'(?P<literal>[^\']*)\')\s*(\.|$)')


def header_keys(line: str) -> list[str] | None:
    """The dotted key of a `[table]` or `[[array]]` header line, unquoted; None for any other line."""
    match = _HEADER.match(line.rstrip("\r\n"))
    if match is None:
        return None
    keys: list[str] = []
    rest = match.group("keys")
    while rest.strip():
        part = _KEY.match(rest)
        if part is None:
            return None
        if part.group("bare") is not None:
            keys.append(part.group("bare"))
        elif part.group("basic") is not None:
            keys.append(json.loads(part.group("basic")))
        else:
            keys.append(part.group("literal"))
        rest = rest[part.end() :]
    return keys


def drop_table(text: str, name: str) -> str:
    """`text` without the `[mcp_servers.<name>]` table and its sub-tables (with setup's own comment lines and the
    blank line before them); the rest of the file as it was."""
    lines = text.splitlines(keepends=True)
    kept: list[str] = []
    inside = False
    for line in lines:
        keys = header_keys(line)
        if keys is not None:
            entering = keys[:2] == ["mcp_servers", name] and not inside
            inside = keys[:2] == ["mcp_servers", name]
            if entering:
                while kept and kept[-1].strip() in (MARK, APPROVALS, REQUIRED):
                    kept.pop()
                if kept and not kept[-1].strip() and (not kept[:-1] or kept[-2].strip()):
                    kept.pop()
        if not inside:
            kept.append(line)
    return "".join(kept)
