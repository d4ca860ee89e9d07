"""What `gemini-relay setup` writes: one stdio or one HTTP entry, in the shape each client reads.

Both can live side by side under distinct names (`gemini-relay`, `gemini-relay-http`), so adding the HTTP entry
next to the stdio one never fails with "already exists". A stdio entry starts this very installation by absolute
path (so it works from any working directory) and carries GEMINI_CLI_TRUST_WORKSPACE=true: the Gemini CLI refuses
to run headless in a folder it has not been told to trust (exit 55), and without it the gemini backend's first
call fails. An HTTP entry carries the bearer token the HTTP listener expects (transports/token.py).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

STDIO_NAME = "gemini-relay"
HTTP_NAME = "gemini-relay-http"
NAMES = (STDIO_NAME, HTTP_NAME)
TRUST_ENV = {"GEMINI_CLI_TRUST_WORKSPACE": "true"}
TOOL_TIMEOUT_SEC = 600  # Codex's default is 60 s; a Gemini run often takes longer (GEMINI_RELAY_QUEUE_WAIT is 600)
# Codex starts a stdio server with a fixed handful of variables (HOME, PATH, USER, ...): these reach the relay only
# when the entry forwards them by name. Names only: the values stay in the user's environment.
CODEX_FORWARD = (
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "GOOGLE_GENAI_USE_VERTEXAI",
    "GOOGLE_CLOUD_PROJECT",
    "GOOGLE_CLOUD_LOCATION",
    "GOOGLE_APPLICATION_CREDENTIALS",
)
_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


@dataclass(frozen=True)
class Token:
    """The HTTP bearer token: its value (None in a dry run before the relay has made one) and where it lives."""

    value: str | None
    where: str


@dataclass(frozen=True)
class Entry:
    """One server entry: a command to start (stdio) or a URL with a token (HTTP)."""

    name: str
    command: str = ""
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    url: str = ""
    token: Token | None = field(default=None)

    @property
    def http(self) -> bool:
        return bool(self.url)

    def environment(self) -> dict[str, str]:
        return dict(self.env)

    def authorization(self, *, shown: bool) -> str:
        """The Authorization header's value; the token itself only when `shown` (the printed entry names it)."""
        assert self.token is not None
        if shown and self.token.value is not None:
            return f"Bearer {self.token.value}"
        return f"Bearer <{self.token.where}>"


def launcher(argv0: str, executable: str) -> tuple[str, tuple[str, ...]]:
    """How an entry starts this installation: the `gemini-relay` script that is running (or the one beside this
    Python), by absolute path; else this Python with `-m gemini_relay`."""
    script = Path(argv0)
    if script.name == "gemini-relay" and os.access(script, os.X_OK):
        return str(script.absolute()), ()  # a link (pipx's ~/.local/bin) stays the link
    beside = Path(executable).parent / "gemini-relay"
    if os.access(beside, os.X_OK):
        return str(beside), ()
    return executable, ("-m", "gemini_relay")


def stdio_entry(command: str, args: Sequence[str], extra_env: Mapping[str, str] | None = None) -> Entry:
    env = {**TRUST_ENV, **(extra_env or {})}
    return Entry(STDIO_NAME, command=command, args=tuple(args), env=tuple(sorted(env.items())))


def http_entry(url: str, token: Token) -> Entry:
    return Entry(HTTP_NAME, url=url, token=token)


def read_only_tools(*, read_only: bool = True) -> list[str]:
    """The tools whose annotations say readOnlyHint (`read_only` False: the others, the ones that start runs), read
    from the server's own tool definitions (every toolset: approvals for tools a server does not list are never
    used)."""
    from gemini_relay.core.vocabulary import Toolset
    from gemini_relay.tools.registry import registry

    tools = registry(test_tools=False, toolsets=frozenset(Toolset))
    return [tool.name for tool in tools if tool.effect.hints.read_only == read_only]


# The JSON shapes. `shown` False puts a placeholder where the token goes (what setup prints).


def plain_shape(entry: Entry, *, shown: bool) -> dict[str, Any]:
    """Cursor, Claude Desktop, agy: `command`/`args`/`env`, or `url`/`headers`."""
    if entry.http:
        return {"url": entry.url, "headers": {"Authorization": entry.authorization(shown=shown)}}
    return {"command": entry.command, "args": list(entry.args), "env": entry.environment()}


def typed_shape(entry: Entry, *, shown: bool) -> dict[str, Any]:
    """Claude Code (`~/.claude.json`, what `claude mcp add-json` stores) and VS Code: the same with a `type`."""
    return {"type": "http" if entry.http else "stdio", **plain_shape(entry, shown=shown)}


def gemini_shape(entry: Entry, *, shown: bool) -> dict[str, Any]:
    """The Gemini CLI's settings.json: Streamable HTTP is `httpUrl` (its `url` means SSE)."""
    if entry.http:
        return {"httpUrl": entry.url, "headers": {"Authorization": entry.authorization(shown=shown)}}
    return plain_shape(entry, shown=shown)


# Codex's config.toml, written as text so the user's file is kept byte for byte around it.

MARK = "# Written by `gemini-relay setup`; `gemini-relay setup --remove` takes it out."
APPROVALS = "# Read-only tools (readOnlyHint) run without a prompt; the others follow your approval policy."
APPROVE_ALL = "# Every tool runs without a prompt (gemini-relay setup --approve all), in `codex exec` too."
# Measured with Codex 0.169.0: `codex exec` sends its first model request without waiting for a server that is not
# `required`, so a relay still starting is missing from that turn; a required one is waited for (startup_timeout_sec).
REQUIRED = "# required: Codex waits for the relay before its first turn (and says so if it cannot start)."


def codex_block(entry: Entry, approved: Sequence[str], *, shown: bool, approve_all: bool = False) -> str:
    """The `[mcp_servers.<name>]` table, its per-tool approvals as dotted keys in it (`tools.<tool>.approval_mode`,
    the same as `[mcp_servers.<name>.tools.<tool>]` tables) or, `approve_all`, the server's
    `default_tools_approval_mode`, as TOML text ending in a newline.

    Measured with Codex 0.169.0: a tool without readOnlyHint needs approval, and `codex exec` (no one to ask) refuses
    it ("MCP tool call requires approval") under approval_policy "never" and under Codex's default alike, unless the
    entry approves it."""
    server = f"mcp_servers.{toml_key(entry.name)}"
    lines = [MARK, f"[{server}]"]
    if entry.http:
        lines.append(f"url = {toml_str(entry.url)}")
        lines.append(f"http_headers = {toml_table({'Authorization': entry.authorization(shown=shown)})}")
    else:
        lines.append(f"command = {toml_str(entry.command)}")
        lines.append(f"args = {toml_list(entry.args)}")
        lines.append(f"env = {toml_table(entry.environment())}")
        lines.append(f"env_vars = {toml_list(CODEX_FORWARD)}")
    lines.append(f"tool_timeout_sec = {TOOL_TIMEOUT_SEC}")
    if not entry.http:
        lines += [REQUIRED, "required = true"]
    if approve_all:
        lines += [APPROVE_ALL, 'default_tools_approval_mode = "approve"']
        return "\n".join(lines) + "\n"
    if approved:
        lines.append(APPROVALS)
    lines += [f'tools.{toml_key(tool)}.approval_mode = "approve"' for tool in approved]
    return "\n".join(lines) + "\n"


def toml_str(value: str) -> str:
    """A TOML basic string: JSON's escapes (\\", \\\\, \\n, \\uXXXX) are all valid TOML escapes."""
    return json.dumps(value, ensure_ascii=False)


def toml_key(key: str) -> str:
    return key if _BARE_KEY.fullmatch(key) else toml_str(key)


def toml_list(values: Sequence[str]) -> str:
    return "[" + ", ".join(toml_str(v) for v in values) + "]"


def toml_table(values: Mapping[str, str]) -> str:
    if not values:
        return "{}"
    return "{ " + ", ".join(f"{toml_key(k)} = {toml_str(v)}" for k, v in values.items()) + " }"
