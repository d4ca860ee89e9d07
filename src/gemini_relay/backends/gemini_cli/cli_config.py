"""What the Gemini CLI 0.61.0 reads before it runs, read the way it does (its bundle: loadSettings, loadEnvironment,
checkPathTrust): its settings files merged, whether it trusts the workspace, and the `.env` file it loads. Pure
file reads, no process: gemini-doctor's view of the CLI's own decisions (auth.py decides the auth type from it).

Precedence, lowest first: system defaults, the user's `~/.gemini/settings.json`, the workspace's
`<project>/.gemini/settings.json` (only when the folder is trusted), system settings. Files may hold comments.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gemini_relay.backends.gemini_cli.settings import gemini_home

TRUST_LEVELS = ("TRUST_FOLDER", "TRUST_PARENT", "DO_NOT_TRUST")
# An untrusted workspace's .env may set only these (the CLI's AUTH_ENV_VAR_WHITELIST).
UNTRUSTED_ENV_KEYS = ("GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_CLOUD_PROJECT", "GOOGLE_CLOUD_LOCATION")
_COMMENT = re.compile(r'"(?:\\.|[^"\\])*"|//[^\n]*|/\*.*?\*/', re.DOTALL)
_DOTENV = re.compile(r"^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_.-]*)\s*=\s*(.*?)\s*$")


@dataclass(frozen=True)
class Trust:
    trusted: bool
    why: str  # `GEMINI_CLI_TRUST_WORKSPACE=true`, `folder trust is off in settings`, `trustedFolders.json: …`


@dataclass(frozen=True)
class CliView:
    """The CLI's settings and environment for one workspace, as it will see them."""

    home: Path  # the folder holding its `.gemini` (GEMINI_CLI_HOME, else HOME)
    settings: dict[str, Any]
    trust: Trust
    env: dict[str, str]  # the child env, plus what the CLI's .env file adds
    files: dict[str, Path]  # scope -> the settings file of that scope that exists ("user", "workspace", ...)
    errors: list[str] = field(default_factory=list[str])  # files the CLI refuses to start with
    env_file: Path | None = None
    env_only: frozenset[str] = frozenset()  # the variables only the .env file gives it

    def get(self, *keys: str) -> Any:
        node: Any = self.settings
        for key in keys:
            node = node.get(key) if isinstance(node, dict) else None
        return node

    def source_of(self, *keys: str) -> Path | None:
        """The highest-precedence settings file that sets `keys` (where to change it)."""
        for scope in ("system", "workspace", "user", "system defaults"):
            path = self.files.get(scope)
            if path is not None and _get(_load(path)[0], keys) is not None:
                return path
        return None


def read_cli_view(child_env: Mapping[str, str], workspace: Path) -> CliView:
    home = gemini_home(child_env)
    system = Path(child_env.get("GEMINI_CLI_SYSTEM_SETTINGS_PATH") or "/etc/gemini-cli/settings.json")
    defaults = Path(child_env.get("GEMINI_CLI_SYSTEM_DEFAULTS_PATH") or system.parent / "system-defaults.json")
    paths = {"system defaults": defaults, "user": home / ".gemini" / "settings.json", "system": system}
    if workspace.resolve() != home.resolve():
        paths["workspace"] = workspace / ".gemini" / "settings.json"
    loaded: dict[str, dict[str, Any]] = {}
    errors: list[str] = []
    for scope, path in paths.items():
        data, error = _load(path)
        loaded[scope] = data
        if error:
            errors.append(f"{path}: {error}")
    trust = _trust(child_env, _merge(loaded["system defaults"], loaded["user"], loaded["system"]), workspace, errors)
    workspace_settings = loaded.get("workspace", {}) if trust.trusted else {}
    merged = _merge(loaded["system defaults"], loaded["user"], workspace_settings, loaded["system"])
    ignore_local = bool(_get(merged, ("advanced", "ignoreLocalEnv")))
    env_file = _find_env_file(workspace, home, trusted=trust.trusted, ignore_local=ignore_local)
    env = dict(child_env)
    for key, value in _dotenv(env_file).items() if env_file is not None else ():
        if (trust.trusted or key in UNTRUSTED_ENV_KEYS) and key not in env:
            env[key] = value if trust.trusted else re.sub(r"[^a-zA-Z0-9\-_./]", "", value)
    existing = {scope: path for scope, path in paths.items() if path.is_file()}
    added = frozenset(env) - frozenset(child_env)
    return CliView(home, merged, trust, env, existing, errors, env_file, added)


def _trust(env: Mapping[str, str], settings: dict[str, Any], workspace: Path, errors: list[str]) -> Trust:
    if env.get("GEMINI_RESTRICTED_MODE") == "true":
        return Trust(False, "GEMINI_RESTRICTED_MODE=true")
    if env.get("GEMINI_CLI_TRUST_WORKSPACE") == "false":
        return Trust(False, "GEMINI_CLI_TRUST_WORKSPACE=false")
    if env.get("GEMINI_CLI_TRUST_WORKSPACE") == "true":
        return Trust(True, "GEMINI_CLI_TRUST_WORKSPACE=true")
    if _get(settings, ("security", "folderTrust", "enabled")) is False:
        return Trust(True, "folder trust is off in its settings (security.folderTrust.enabled: false)")
    path = Path(env.get("GEMINI_CLI_TRUSTED_FOLDERS_PATH") or gemini_home(env) / ".gemini" / "trustedFolders.json")
    rules, error = _load(path)
    bad = [k for k, v in rules.items() if v not in TRUST_LEVELS]
    if error or bad:
        errors.append(f"{path}: {error or f'invalid trust level for {bad[0]!r}'}")
        return Trust(False, f"{path} cannot be read by the CLI")
    level = _longest_rule(rules, workspace)
    if level in ("TRUST_FOLDER", "TRUST_PARENT"):
        return Trust(True, f"{path} trusts it ({level})")
    if level == "DO_NOT_TRUST":
        return Trust(False, f"{path} marks it DO_NOT_TRUST")
    return Trust(False, f"it is not in {path} and folder trust is on")


def _longest_rule(rules: dict[str, Any], workspace: Path) -> str | None:
    location = os.path.realpath(workspace)
    best, level = -1, None
    for rule, trust in rules.items():
        effective = os.path.dirname(rule) if trust == "TRUST_PARENT" else rule  # noqa: PTH120 - as the CLI does
        root = os.path.realpath(effective)
        inside = location == root or location.startswith(root.rstrip("/") + "/")
        if inside and len(rule) > best:
            best, level = len(rule), str(trust)
    return level


def _find_env_file(workspace: Path, home: Path, *, trusted: bool, ignore_local: bool) -> Path | None:
    current = workspace.resolve()
    while True:
        if trusted and (current / ".gemini" / ".env").is_file():
            return current / ".gemini" / ".env"
        if (current / ".env").is_file() and (not ignore_local or current == home):
            return current / ".env"
        if current.parent == current:
            break
        current = current.parent
    for candidate in ([home / ".gemini" / ".env"] if trusted else []) + [home / ".env"]:
        if candidate.is_file():
            return candidate
    return None


def _dotenv(path: Path) -> dict[str, str]:
    values: dict[str, str] = {}
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return values
    for line in lines:
        match = _DOTENV.match(line)
        if match is None or line.lstrip().startswith("#"):
            continue
        key, raw = match.groups()
        if raw[:1] in ("'", '"') and raw.endswith(raw[0]) and len(raw) > 1:
            values[key] = raw[1:-1]
        else:
            values[key] = raw.split(" #", 1)[0].strip()
    return values


def _load(path: Path) -> tuple[dict[str, Any], str | None]:
    """A settings file's object (empty when there is none), and why the CLI would refuse it."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}, None
    except (OSError, UnicodeDecodeError) as exc:
        return {}, f"cannot be read ({exc})"
    try:
        data = json.loads(_COMMENT.sub(lambda m: m.group(0) if m.group(0).startswith('"') else "", text))
    except ValueError as exc:
        return {}, f"is not valid JSON ({exc})"
    if not isinstance(data, dict):
        return {}, "is not a JSON object"
    return data, None


def _merge(*layers: dict[str, Any]) -> dict[str, Any]:
    merged: dict[str, Any] = {}
    for layer in layers:
        for key, value in layer.items():
            if isinstance(value, dict) and isinstance(merged.get(key), dict):
                merged[key] = _merge(merged[key], value)
            else:
                merged[key] = value
    return merged


def _get(data: dict[str, Any], keys: tuple[str, ...]) -> Any:
    node: Any = data
    for key in keys:
        node = node.get(key) if isinstance(node, dict) else None
    return node
