"""The stdio front's recording (`<state dir>/stdio-front.json`): the SDK's initialize and tools/list answers.

An entry is keyed by the setup (settings, working directory, initialize params) and by the content of the build:
a digest of every module file of the relay, the MCP SDK and pydantic (which writes the tool schemas). Hashing ~400
files (~4 MB) on every start would cost more than the front saves, so each file's digest is kept beside the entries
with its size, mtime, ctime and inode, and the file is read again when any of them moved: an edit that keeps the
size and puts the mtime back still moves the ctime. The recording is trusted only when this user owns it and its
folder and nobody else may write either (served answers reach the client's model as tool descriptions and
instructions); anything else, or a corrupt file, is ignored with a warning, and the next recording replaces it,
written atomically and 0600.

Light on purpose: imported before the MCP SDK loads.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sys
from collections.abc import Mapping
from importlib.util import find_spec
from pathlib import Path
from typing import Any

from gemini_relay import __version__
from gemini_relay.core.files import load_trusted_json, trusted_folder, write_file

CACHE_NAME = "stdio-front.json"
CACHE_KEYS = 8  # setups remembered (e.g. one per project)
FORMAT = 2  # 1 keyed builds by mtimes alone
MAX_BYTES = 4 * 1024 * 1024  # a recording is ~50 KB a setup; a bigger file is not one of ours
MAX_DIGESTS = 5_000  # files of a few installs sharing one state dir; past that only this build's are kept
BUILD_PACKAGES = ("gemini_relay", "mcp", "mcp_types", "pydantic", "pydantic_core")
_BUILD_SUFFIXES = (".py", ".so")
_KEYED_PREFIXES = ("GEMINI_", "GOOGLE_", "AGY_", "XDG_")
_WHAT = "the stdio quick-start recording"

Entry = dict[str, dict[str, Any]]  # {"initialize": result, "tools": result}


def setup_key(env: Mapping[str, str], cwd: str) -> str:
    """What the recorded answers depend on besides the build and the initialize params."""
    # PATH too: the automatic backend choice looks there, and the instructions and descriptions speak of that backend.
    keyed = sorted((k, v) for k, v in env.items() if k.startswith(_KEYED_PREFIXES) or k in ("HOME", "PATH"))
    material = [FORMAT, __version__, sys.version, sys.executable, cwd, keyed]
    return hashlib.sha256(json.dumps(material).encode()).hexdigest()


class FrontCache:
    """The recorded answers, one entry per (setup, build, initialize params), and the build's file digests."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._read: tuple[dict[str, Entry], dict[str, list[Any]]] | None = None
        self._fresh: dict[str, list[Any]] = {}  # digests computed by this process
        self._build: str | None = None

    def _contents(self) -> tuple[dict[str, Entry], dict[str, list[Any]]]:
        if self._read is None:
            self._read = _parse(load_trusted_json(self.path, what=_WHAT, limit=MAX_BYTES))
        return self._read

    def build(self) -> str:
        """The digest of the build's content (computed once per process)."""
        if self._build is None:
            known = self._contents()[1]
            files = sorted(_build_files())
            digests = [(path, self._digest(path, known)) for path in files]
            self._build = hashlib.sha256(json.dumps(digests).encode()).hexdigest()
        return self._build

    def _digest(self, path: str, known: dict[str, list[Any]]) -> str:
        try:
            info = os.stat(path)  # noqa: PTH116 - a str path from scandir
        except OSError:
            return "missing"
        stamp = [info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino, info.st_dev]
        cached = known.get(path)
        if cached is not None and cached[:5] == stamp:
            return str(cached[5])
        try:
            with open(path, "rb") as handle:  # noqa: PTH123 - a str path from scandir
                digest = hashlib.sha256(handle.read()).hexdigest()
        except OSError:
            return "unreadable"
        self._fresh[path] = [*stamp, digest]
        return digest

    def load(self, key: str) -> Entry | None:
        return self._contents()[0].get(key)

    def record(self, key: str, initialize: dict[str, Any], tools: dict[str, Any]) -> bool:
        """Record the SDK's answers; True when they replaced different ones (the recording was stale)."""
        old = self.load(key)
        if old == {"initialize": initialize, "tools": tools} and not self._fresh:
            return False
        if trusted_folder(self.path.parent, what=f"the state dir of {_WHAT}"):
            entries, digests = _parse(load_trusted_json(self.path, what=_WHAT, limit=MAX_BYTES))  # others' too
            entries = {k: v for k, v in entries.items() if k != key}
            entries[key] = {"initialize": initialize, "tools": tools}
            while len(entries) > CACHE_KEYS:
                del entries[next(iter(entries))]
            merged = {**digests, **self._fresh} if len(digests) < MAX_DIGESTS else dict(self._fresh)
            data = {"format": FORMAT, "entries": entries, "digests": merged}
            with contextlib.suppress(OSError):  # a read-only state dir only costs the next start its head start
                write_file(self.path, json.dumps(data, ensure_ascii=False).encode("utf-8"), private=True)
                self._read, self._fresh = (entries, merged), {}
        return old is not None and old != {"initialize": initialize, "tools": tools}


def _parse(data: dict[str, Any] | None) -> tuple[dict[str, Entry], dict[str, list[Any]]]:
    """The well-formed entries and digests of a recording; the rest (an older format, a torn edit) is dropped."""
    if data is None or data.get("format") != FORMAT:
        return {}, {}
    raw_entries, raw_digests = data.get("entries"), data.get("digests")
    entries: dict[str, Entry] = {}
    for key, entry in raw_entries.items() if isinstance(raw_entries, dict) else ():  # pyright: ignore[reportUnknownVariableType]
        if isinstance(entry, dict) and all(isinstance(entry.get(k), dict) for k in ("initialize", "tools")):  # pyright: ignore[reportUnknownMemberType]
            entries[str(key)] = {"initialize": entry["initialize"], "tools": entry["tools"]}  # pyright: ignore[reportUnknownArgumentType]
    digests: dict[str, list[Any]] = {}
    for path, row in raw_digests.items() if isinstance(raw_digests, dict) else ():  # pyright: ignore[reportUnknownVariableType]
        if isinstance(row, list) and len(row) == 6 and isinstance(row[5], str):  # pyright: ignore[reportUnknownArgumentType]
            digests[str(path)] = row  # pyright: ignore[reportUnknownArgumentType]
    return entries, digests


def _build_files() -> list[str]:
    """Every module file of the packages the answers come from (~1,000 stats, a few ms)."""
    found: list[str] = []
    for package in BUILD_PACKAGES:
        spec = find_spec(package)
        roots = list(spec.submodule_search_locations or []) if spec is not None else []
        while roots:
            with contextlib.suppress(OSError), os.scandir(roots.pop()) as entries:
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False) and entry.name != "__pycache__":
                        roots.append(entry.path)
                    elif entry.name.endswith(_BUILD_SUFFIXES):
                        found.append(entry.path)
    return found
