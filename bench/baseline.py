"""The cold baseline the benches set their figures against: one bare `gemini -p` of the pinned CLI, timed."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from tests.fakes.gemini_home import REPO_GEMINI_CLI

MODEL = "gemini-2.5-pro"  # named, so the CLI makes no router call first (one API request per prompt)


def bare_cli(env: dict[str, str], cwd: Path) -> float:
    """Seconds for `gemini -p hi` to answer and exit, with exactly `env` (the emulator's)."""
    start = time.perf_counter()
    subprocess.run(
        [str(REPO_GEMINI_CLI), "-p", "hi", "-m", MODEL, "--output-format", "stream-json"],
        env=env,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        check=True,
        start_new_session=True,
    )
    return time.perf_counter() - start
