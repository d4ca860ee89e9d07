"""Stand-in binaries: small shell scripts the code under test finds and runs."""

from __future__ import annotations

from pathlib import Path


def shell_script(path: Path, body: str = "") -> Path:
    """An executable `/bin/sh` script at `path` (its folder made as needed) that runs `body`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n" + body, encoding="utf-8")
    path.chmod(0o755)
    return path
