"""Binary discovery and the `--help` / `--version` probes, run once per resolved binary and cached."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import anyio

from gemini_relay.core.trusted_files import OTHERS_WRITE, load_trusted_json, write_file
from gemini_relay.supervise.process import ProcessSpec, SpawnError, run_process

PROBE_TIMEOUT = 15.0  # a cold node CLI prints --help in ~1.2 s here; CI machines can be several times slower
_FLAG = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]*)")


def locate(configured: str | None, default_name: str, environ: Mapping[str, str]) -> Path | None:
    """The executable named by `configured` (a path or a name) or found on PATH, resolved; None if absent."""
    name = configured or default_name
    if os.sep in name or (os.altsep and os.altsep in name):
        path = Path(name).expanduser()
        return path.resolve() if path.is_file() and os.access(path, os.X_OK) else None
    found = shutil.which(name, path=environ.get("PATH"))
    return Path(found).resolve() if found else None


@dataclass(frozen=True)
class ProbeResult:
    ok: bool
    text: str
    returncode: int | None = None
    timed_out: bool = False  # no answer within the bound (a busy machine), which says nothing of what it would say


async def run_probe(
    argv: Sequence[str], env: Mapping[str, str], cwd: Path, timeout: float = PROBE_TIMEOUT
) -> ProbeResult:
    """Run a short informational command, stdout and stderr together; never raises for the command's failure."""
    out = bytearray()
    try:
        with anyio.move_on_after(timeout):
            exit_ = await run_process(ProcessSpec(argv=argv, env=env, cwd=cwd), out.extend, grace=1.0)
            text = out.decode("utf-8", errors="replace") + exit_.stderr
            return ProbeResult(ok=exit_.returncode == 0, text=text, returncode=exit_.returncode)
    except SpawnError as exc:
        return ProbeResult(ok=False, text=str(exc))
    said = f"{Path(argv[0]).name} {' '.join(argv[1:])} did not answer within {timeout:g}s"
    return ProbeResult(ok=False, text=said, timed_out=True)


def parse_flags(help_text: str) -> frozenset[str]:
    """Every long option a `--help` text advertises."""
    return frozenset(_FLAG.findall(help_text))


class ProbeCache:
    """One `--help` and one `--version` per resolved binary; concurrent askers share one probe.

    With `persist_dir`, successful results are also kept on disk keyed by the binary's path, size and mtime, so
    job supervisors (one process per run) do not pay a ~1.5 s `--help` each; an upgraded binary has a new key.
    """

    def __init__(self, persist_dir: Path | None = None) -> None:
        self._results: dict[tuple[str, str], ProbeResult] = {}
        self._locks: dict[tuple[str, str], anyio.Lock] = {}
        self._persist_dir = persist_dir

    async def get(self, binary: Path, arg: str, env: Mapping[str, str], cwd: Path) -> ProbeResult:
        key = (str(binary), arg)
        lock = self._locks.setdefault(key, anyio.Lock())
        async with lock:
            cached = self._results.get(key) or self._load(binary, arg)
            if cached is not None:
                self._results[key] = cached
                return cached
            result = await run_probe([str(binary), arg], env, cwd)
            if result.ok:
                # Only success is cached: a binary fixed or installed later is picked up.
                self._results[key] = result
                self._save(binary, arg, result)
            return result

    def _file(self, binary: Path, arg: str) -> Path | None:
        if self._persist_dir is None:
            return None
        try:
            st = binary.stat()
        except OSError:
            return None
        ident = f"{binary}\0{st.st_size}\0{st.st_mtime_ns}\0{arg}".encode()
        return self._persist_dir / f"{hashlib.sha256(ident).hexdigest()[:32]}.json"

    def _load(self, binary: Path, arg: str) -> ProbeResult | None:
        path = self._file(binary, arg)
        if path is None:
            return None
        data = load_trusted_json(path, what="the cached probe", mask=OTHERS_WRITE)  # older ones: umask modes
        try:
            return ProbeResult(ok=True, text=str(data["text"]), returncode=int(data["returncode"])) if data else None
        except (ValueError, KeyError, TypeError):
            return None

    def _save(self, binary: Path, arg: str, result: ProbeResult) -> None:
        path = self._file(binary, arg)
        if path is None:
            return
        with contextlib.suppress(OSError):  # the cache is an optimisation; a read-only dir just means no cache
            write_file(path, json.dumps({"text": result.text, "returncode": result.returncode}).encode(), private=True)
