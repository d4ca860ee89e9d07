"""Child processes the tests run: stand-in binaries (small shell scripts), and the relay's own command line."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TypedDict, Unpack


def shell_script(path: Path, body: str = "") -> Path:
    """An executable `/bin/sh` script at `path` (its folder made as needed) that runs `body`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n" + body, encoding="utf-8")
    path.chmod(0o755)
    return path


class ChildOptions(TypedDict, total=False):
    env: Mapping[str, str] | None  # None (the default): this process's environment
    cwd: Path | None
    stdin: str  # fed in, then closed ("" by default)
    timeout: float  # 60 s by default


def python_child(*args: str, **options: Unpack[ChildOptions]) -> subprocess.CompletedProcess[str]:
    """`python ARGS` with this interpreter, its output read as text; its exit code is the caller's to check."""
    return subprocess.run(
        [sys.executable, *args],
        input=options.get("stdin", ""),
        capture_output=True,
        text=True,
        env=options.get("env"),
        cwd=options.get("cwd"),
        timeout=options.get("timeout", 60),
        check=False,
    )


def relay_command(*args: str, **options: Unpack[ChildOptions]) -> subprocess.CompletedProcess[str]:
    """`python -m gemini_relay ARGS` as a user runs it."""
    return python_child("-m", "gemini_relay", *args, **options)


def spawn_server(
    argv: list[str], *, cwd: Path | None = None, env: Mapping[str, str] | None = None
) -> subprocess.Popen[bytes]:
    """A server child leading its own process group (a stop reaches all it starts), stdin and stdout closed, stderr
    piped: the caller reads the address it listens on from there."""
    return subprocess.Popen(
        argv,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
