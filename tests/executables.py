"""Child processes the tests run: stand-in binaries (small shell scripts), and the relay's own command line."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path


def shell_script(path: Path, body: str = "") -> Path:
    """An executable `/bin/sh` script at `path` (its folder made as needed) that runs `body`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n" + body, encoding="utf-8")
    path.chmod(0o755)
    return path


def python_child(
    *args: str,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    stdin: str = "",
    timeout: float = 60,
) -> subprocess.CompletedProcess[str]:
    """`python ARGS` with this interpreter (`env` None: this process's environment), `stdin` fed in and its output
    read as text; its exit code is the caller's to check."""
    return subprocess.run(
        [sys.executable, *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=timeout,
        check=False,
    )


def relay_command(
    *args: str,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    stdin: str = "",
    timeout: float = 60,
) -> subprocess.CompletedProcess[str]:
    """`python -m gemini_relay ARGS` as a user runs it."""
    return python_child("-m", "gemini_relay", *args, env=env, cwd=cwd, stdin=stdin, timeout=timeout)


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
