"""Codex's `config.toml`, edited as text so that the user's file is kept byte for byte around setup's table.

An entry is a block of text appended at the end (and recorded); undoing it takes exactly that text out again. When
the user has changed the table since (a comment inside it, a note right after it), the table is taken out line by
line instead, and every comment that is not setup's own stays where it was: a full-line comment as it is, a comment
at the end of a key or header line on a line of its own. tomlkit (a TOML parser that keeps comments) reads each such
line, so a `#` inside a string is never taken for one; a line of the table it cannot read alone (a value spanning
lines) that holds a `#` is refused rather than guessed at. Every edit is parsed back (tomllib) and must leave the
rest of the document's values as they were before it may be written.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Mapping, Sequence
from typing import Any

import tomlkit
from tomlkit.exceptions import TOMLKitError

from gemini_relay.setup.entries import APPROVALS, APPROVE_ALL, MARK, REQUIRED, Entry, codex_block
from gemini_relay.setup.formats import FormatError

OWN_LINES = frozenset({MARK, APPROVALS, APPROVE_ALL, REQUIRED})  # setup's comment lines: they go with its table


class CodexFormat:
    """`~/.codex/config.toml`: `[mcp_servers.<name>]` tables, with `[mcp_servers.<name>.tools.<tool>]` approvals
    (or, `approve_all`, the server's `default_tools_approval_mode`)."""

    def __init__(self, approved: Sequence[str], *, approve_all: bool = False) -> None:
        self.approved = list(approved)
        self.approve_all = approve_all

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

    def _block(self, entry: Entry, *, shown: bool, approve_all: bool | None = None) -> str:
        every = self.approve_all if approve_all is None else approve_all
        return codex_block(entry, self.approved, shown=shown, approve_all=every)

    def want(self, entry: Entry) -> object:
        return tomllib.loads(self._block(entry, shown=True))["mcp_servers"][entry.name]

    def known(self, entry: Entry) -> list[object]:
        return [
            tomllib.loads(self._block(entry, shown=True, approve_all=every))["mcp_servers"][entry.name]
            for every in (False, True)
        ]

    def show(self, entry: Entry) -> str:
        return self._block(entry, shown=False).rstrip("\n")

    def add(self, text: str | None, data: Mapping[str, Any], entries: Sequence[Entry]) -> tuple[str, dict[str, str]]:
        current = text or ""
        added: dict[str, str] = {}
        for entry in entries:
            if self.get(data, entry.name) is not None:
                current = drop_table(current, entry.name)  # --force or an update: the table goes, comments stay
            separator = "" if not current else "\n" if current.endswith("\n") else "\n\n"
            added[entry.name] = separator + self._block(entry, shown=True)
            current += added[entry.name]
        parsed = self.parse(current)
        for entry in entries:
            if self.get(parsed, entry.name) != self.want(entry):
                raise FormatError(f"[mcp_servers.{entry.name}] would not read back as written (dotted keys?)")
        _same_elsewhere(data, parsed, [entry.name for entry in entries])
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
        _same_elsewhere(data, parsed, names)
        return current


def _same_elsewhere(before: Mapping[str, Any], after: Mapping[str, Any], names: Sequence[str]) -> None:
    """The edit changed nothing but the named servers' tables."""

    def rest(data: Mapping[str, Any]) -> dict[str, Any]:
        servers = {k: v for k, v in (data.get("mcp_servers") or {}).items() if k not in names}
        out = {k: v for k, v in data.items() if k != "mcp_servers"}
        return {**out, "mcp_servers": servers} if servers else out

    if rest(before) != rest(after):
        raise FormatError("the edit would change more of the file than setup's table; left alone")


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
    blank line before them), keeping every other comment in it (see the module docstring); the rest as it was."""
    kept: list[str] = []
    region: list[str] = []
    inside = False
    for line in text.splitlines(keepends=True):
        keys = header_keys(line)
        if keys is not None:
            now = keys[:2] == ["mcp_servers", name]
            if now and not inside:
                while kept and kept[-1].strip() in OWN_LINES:
                    kept.pop()
                if kept and not kept[-1].strip() and (not kept[:-1] or kept[-2].strip()):
                    kept.pop()
            elif inside and not now:
                kept += _comments_of(region)
                region = []
            inside = now
        (region if inside else kept).append(line)
    return "".join(kept + _comments_of(region))


def _comments_of(region: list[str]) -> list[str]:
    """The user's comments in a table's lines, each on a line of its own (a blank line after them when the table
    ended with one, to keep it apart from what follows)."""
    out: list[str] = []
    for line in region:
        stripped = line.strip()
        if not stripped or stripped in OWN_LINES:
            continue
        if stripped.startswith("#"):
            out.append(line if line.endswith("\n") else line + "\n")
            continue
        comment = _inline_comment(line)
        if comment:
            out.append(comment + "\n")
    if out and region and not region[-1].strip():
        out.append("\n")
    return out


def _inline_comment(line: str) -> str:
    """The comment at the end of a key or header line, read by tomlkit ("" when none).

    Raises:
        FormatError: the line cannot be read alone (part of a value spanning lines) and may hold one.
    """
    try:
        items = tomlkit.parse(line).body
    except TOMLKitError:
        if "#" in line:
            raise FormatError(f"a line of its table cannot be read alone and may hold a comment: {line.strip()}") from (
                None
            )
        return ""
    return next((item.trivia.comment.strip() for _, item in items if item.trivia.comment), "")
