"""The stdio front's answers: the SDK's own `initialize` and `tools/list` results for every surface the relay can
serve (the default tools, each combination of opt-in toolsets, with or without the test tools) and every protocol
version the SDK negotiates with a handshake, shipped with the package in `front_answers.json`.

The file is generated from the tool declarations through the SDK itself (front_answers_make.py) and checked against
it by tests/transports/test_front_answers.py, so a first start answers as fast as any later one: no earlier start,
no recording in the state dir, nothing a client's parameters could key wrongly. It ships inside the package, so it
is exactly as trusted as the code beside it. Repeated parts are stored once (a tool entry, an instructions text)
and referenced by id; a reference is resolved in place, so every key keeps the SDK's order.

Light on purpose: imported before the MCP SDK loads (json, os, shutil and pathlib only).
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

ANSWERS_FILE = Path(__file__).with_name("front_answers.json")
FORMAT = 1
REGENERATE = "python -m gemini_relay.transports.front_answers_make"
# initialize params the front answers: what the SDK reads, and keys that must be objects. Anything else (icons, an
# unknown field, a value of another type) is the SDK's to validate, so the front never answers what it would refuse.
_PARAMS = frozenset({"protocolVersion", "capabilities", "clientInfo", "_meta"})
_CLIENT_INFO = frozenset({"name", "version", "title", "description", "websiteUrl"})
_MODERN_META = "io.modelcontextprotocol/protocolVersion"  # a 2026-07-28 envelope: the SDK routes it


def surface_key(toolsets: Iterable[str], *, test_tools: bool, backend: str) -> str:
    """`gemini:core`, `api:core+jobs+media`, `agy:core+test`: which tools a server lists (the registry's inputs) and the
    backend their descriptions and the instructions speak of."""
    return backend + ":" + "+".join(["core", *sorted(toolsets), *(["test"] if test_tools else [])])


class FrontAnswers:
    """The shipped answers, read once at start."""

    def __init__(self, data: dict[str, Any]) -> None:
        self._data = data
        self.versions: list[str] = list(data["versions"])
        self.latest: str = data["latest"]
        self._spellings: dict[str, str] = dict(data["spellings"])

    def backend(self, chosen: str | None, env: Mapping[str, str]) -> str | None:
        """The backend a server with this GEMINI_MCP_BACKEND and environment runs: an explicit one by any spelling
        the registry accepts; unset, the automatic choice made from the entries' own detection data (a binary on
        PATH or at its variable, a key); None for a name we do not know, or an environment whose start checks the
        front cannot vouch for (the server explains a problem in its own first answer)."""
        if not self._checks_pass(env):
            return None
        if chosen:
            name = self._spellings.get(chosen.strip().lower())
            rule = next((r for r in self._data["choice"] if r["backend"] == name), None)
            configured = env.get(rule["binary"][0], "").strip() if rule and rule["binary"] else ""
            # An explicit binary that is not there is a configuration error the server explains in its answers.
            return None if configured and not _executable(configured, env) else name
        for rule in self._data["choice"]:
            binary, keys = rule["binary"], rule["keys"]
            if binary and _executable(env.get(binary[0], "").strip() or binary[1], env):
                return str(rule["backend"])
            if any(env.get(key, "").strip() for key in keys):
                return str(rule["backend"])
        return str(self._data["default_choice"])

    def _checks_pass(self, env: Mapping[str, str]) -> bool:
        """No variable a backend checks at start is set, but binaries' variables naming an executable."""
        binaries = {rule["binary"][0] for rule in self._data["choice"] if rule["binary"]}
        for variable in self._data["start_checks"]:
            value = env.get(variable, "").strip()
            if value and (variable not in binaries or not _executable(value, env)):
                return False
        return True

    def binary_found(self, backend: str, env: Mapping[str, str]) -> bool:
        """The backend's binary is there (at its variable, or its default name on PATH) and no backend's variable
        names a binary that is not (the server would refuse every run for it: nothing is to be warmed)."""
        for rule in self._data["choice"]:
            configured = env.get(rule["binary"][0], "").strip() if rule["binary"] else ""
            if configured and not _executable(configured, env):
                return False
        rule = next((r for r in self._data["choice"] if r["backend"] == backend), None)
        if rule is None or not rule["binary"]:
            return False
        variable, default = rule["binary"]
        return _executable(env.get(variable, "").strip() or default, env)

    @classmethod
    def load(cls, path: Path = ANSWERS_FILE) -> FrontAnswers | None:
        """The answers, or None when the file is missing or not one of ours (then the SDK answers everything)."""
        try:
            data = json.loads(path.read_bytes())
        except (OSError, ValueError, RecursionError):
            return None
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            return None
        try:
            return cls(data)  # pyright: ignore[reportUnknownArgumentType]
        except (KeyError, TypeError):
            return None

    def negotiated(self, requested: str) -> str:
        """The version the SDK answers with: the client's when it is one of the handshake versions, else the latest."""
        return requested if requested in self.versions else self.latest

    def for_initialize(self, key: str, params: Any) -> tuple[dict[str, Any], dict[str, Any]] | None:
        """The initialize result and the first tools/list page for these params, or None: the SDK's to answer."""
        if not acceptable(params):
            return None
        entry = self._data["answers"].get(key, {}).get(self.negotiated(params["protocolVersion"]))
        if not isinstance(entry, dict):
            return None
        try:
            return self._initialize(entry["initialize"]), self._tools(entry["tools/list"])  # pyright: ignore[reportUnknownArgumentType]
        except (KeyError, TypeError):
            return None

    def _initialize(self, ref: str) -> dict[str, Any]:
        stored: dict[str, Any] = self._data["initialize"][ref]
        texts = self._data["texts"]
        return {name: texts[value] if name == "instructions" else value for name, value in stored.items()}

    def _tools(self, ref: str) -> dict[str, Any]:
        stored: dict[str, Any] = self._data["tools/list"][ref]
        entries = self._data["tools"]
        return {name: [entries[t] for t in value] if name == "tools" else value for name, value in stored.items()}


def usable_state_dir(path: Path) -> bool:
    """The job store can be made there (jobs/store/files.FileJobStore makes these folders, and its failure is a
    configuration problem the server's first answer says)."""
    try:
        path.mkdir(parents=True, exist_ok=True, mode=0o700)
        for sub in ("jobs", "keys", "locks"):
            (path / sub).mkdir(exist_ok=True, mode=0o700)
    except OSError:
        return False
    return True


def _executable(name: str, env: Mapping[str, str]) -> bool:
    """backends/probe.locate's rule: a path must be an executable file; a bare name is looked up on PATH."""
    if os.sep in name:
        path = Path(name).expanduser()
        return path.is_file() and os.access(path, os.X_OK)
    return shutil.which(name, path=env.get("PATH")) is not None


def acceptable(params: Any) -> bool:
    """Params the SDK accepts for certain, by a narrower rule than its own (a client sends exactly these)."""
    if not isinstance(params, dict) or not _PARAMS.issuperset(params):  # pyright: ignore[reportUnknownArgumentType]
        return False
    info, meta = params.get("clientInfo"), params.get("_meta", {})  # pyright: ignore[reportUnknownMemberType]
    return (
        isinstance(params.get("protocolVersion"), str)  # pyright: ignore[reportUnknownMemberType]
        and _flags(params.get("capabilities"))  # pyright: ignore[reportUnknownMemberType]
        and isinstance(info, dict)
        and _CLIENT_INFO.issuperset(info)  # pyright: ignore[reportUnknownArgumentType]
        and all(isinstance(value, str) for value in info.values())  # pyright: ignore[reportUnknownVariableType]
        and isinstance(info.get("name"), str)  # pyright: ignore[reportUnknownMemberType]
        and isinstance(info.get("version"), str)  # pyright: ignore[reportUnknownMemberType]
        and isinstance(meta, dict)
        and _MODERN_META not in meta
    )


def _flags(value: Any, depth: int = 0) -> bool:
    """Capabilities as clients declare them: objects of objects, with true/false at the leaves."""
    if not isinstance(value, dict) or depth > 4:
        return False
    return all(isinstance(v, bool) or _flags(v, depth + 1) for v in value.values())  # pyright: ignore[reportUnknownVariableType]
