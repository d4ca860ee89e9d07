"""The MCP clients setup knows: where each keeps its servers, in which shape, and how to tell it is installed."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from gemini_relay.setup import claude_cli
from gemini_relay.setup.codex_format import CodexFormat
from gemini_relay.setup.entries import gemini_shape, plain_shape, typed_shape
from gemini_relay.setup.formats import Format, JsonFormat

RECURSION = (
    "the relay runs this CLI itself, so every run it starts there would start the relay again inside it; "
    "written only when named (--client {name})"
)


@dataclass(frozen=True)
class Home:
    """The environment setup looks at: variables, the home folder, the platform."""

    env: Mapping[str, str]
    home: Path
    platform: str

    def which(self, name: str) -> str | None:
        return shutil.which(name, path=self.env.get("PATH", ""))

    def folder(self, name: str, default: Path) -> Path:
        """An XDG-style folder variable, else `default`."""
        value = self.env.get(name, "").strip()
        return Path(value).expanduser() if value else default

    def app_config(self) -> Path:
        """Where desktop apps keep their settings: ~/Library/Application Support, %APPDATA% or ~/.config."""
        if self.platform == "darwin":
            return self.home / "Library" / "Application Support"
        if self.platform == "win32":
            return self.folder("APPDATA", self.home / "AppData" / "Roaming")
        return self.folder("XDG_CONFIG_HOME", self.home / ".config")

    def short(self, path: Path | str) -> str:
        """`path` with the home folder written `~`."""
        text = str(path)
        home = str(self.home).rstrip("/")
        return "~" + text[len(home) :] if text == home or text.startswith(home + "/") else text


@dataclass(frozen=True)
class Client:
    name: str  # what --client takes
    label: str
    config: Callable[[Home], Path]
    signs: Callable[[Home], list[str]]  # why it looks installed: commands on PATH, folders present
    format: Callable[[Sequence[str], bool], Format]  # given the read-only tools, and whether every tool (Codex)
    http: bool = True  # reads HTTP entries from that file
    by_default: bool = True  # written without --client when found
    note: str = ""  # why not, when not by default or without HTTP
    names_project: bool = False  # its servers start outside any project: the entry names the project root
    via_cli: str = ""  # the command that edits its config, used when found


def _on_path(*commands: str) -> Callable[[Home], list[str]]:
    def signs(home: Home) -> list[str]:
        return [f"{command} on PATH" for command in commands if home.which(command)]

    return signs


def _signs(*commands: str, paths: Callable[[Home], list[Path]]) -> Callable[[Home], list[str]]:
    def signs(home: Home) -> list[str]:
        found = _on_path(*commands)(home)
        return found + [f"{home.short(p)} exists" for p in paths(home) if p.exists()]

    return signs


def _codex_home(home: Home) -> Path:
    return home.folder("CODEX_HOME", home.home / ".codex")


def _gemini_home(home: Home) -> Path:
    return home.folder("GEMINI_CLI_HOME", home.home) / ".gemini"


CLIENTS: tuple[Client, ...] = (
    Client(
        "claude-code",
        "Claude Code",
        lambda h: claude_cli.config_file(h.env, h.home),
        _signs("claude", paths=lambda h: [claude_cli.config_file(h.env, h.home), h.home / ".claude"]),
        lambda approved, every: JsonFormat("mcpServers", typed_shape),
        via_cli="claude",
    ),
    Client(
        "codex",
        "Codex CLI",
        lambda h: _codex_home(h) / "config.toml",
        _signs("codex", paths=lambda h: [_codex_home(h)]),
        lambda approved, every: CodexFormat(approved, approve_all=every),
    ),
    Client(
        "cursor",
        "Cursor",
        lambda h: h.home / ".cursor" / "mcp.json",
        _signs("cursor", paths=lambda h: [h.home / ".cursor"]),
        lambda approved, every: JsonFormat("mcpServers", plain_shape),
    ),
    Client(
        "vscode",
        "VS Code",
        lambda h: h.app_config() / "Code" / "User" / "mcp.json",
        _signs("code", paths=lambda h: [h.app_config() / "Code" / "User"]),
        lambda approved, every: JsonFormat("servers", typed_shape),
    ),
    Client(
        "claude-desktop",
        "Claude Desktop",
        lambda h: h.app_config() / "Claude" / "claude_desktop_config.json",
        _signs(paths=lambda h: [h.app_config() / "Claude"]),
        lambda approved, every: JsonFormat("mcpServers", plain_shape),
        http=False,
        note="Claude Desktop reads only stdio servers from its config file",
        names_project=True,
    ),
    Client(
        "gemini-cli",
        "Gemini CLI",
        lambda h: _gemini_home(h) / "settings.json",
        _signs("gemini", paths=lambda h: [_gemini_home(h) / "settings.json"]),
        lambda approved, every: JsonFormat("mcpServers", gemini_shape),
        by_default=False,
        note=RECURSION.format(name="gemini-cli"),
    ),
    Client(
        "agy",
        "agy (Antigravity CLI)",
        lambda h: h.home / ".gemini" / "config" / "mcp_config.json",
        _signs("agy", paths=lambda h: [h.home / ".gemini" / "antigravity-cli", h.home / ".gemini" / "config"]),
        lambda approved, every: JsonFormat("mcpServers", plain_shape),
        http=False,
        by_default=False,
        note=RECURSION.format(name="agy") + "; stdio only",
    ),
)
BY_NAME = {client.name: client for client in CLIENTS}
