"""The gemini backend's warm-up at a server's start: where calls run warm it boots no `--help` probe (a second CLI
boot beside the warm CLI's own slowed the first call on 2 cores by as much), where they run cold it probes ahead of
the first call so that call does not pay for it; either way a later need probes on demand."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from gemini_relay.backends.gemini_cli.warm import GeminiBackend
from gemini_relay.backends.probe import ProbeCache
from gemini_relay.config import Settings

pytestmark = pytest.mark.anyio

BOUND = 10.0


def counting_gemini(tmp_path: Path) -> Path:
    """A `gemini` on PATH that appends its first argument to a file, then prints a usage line."""
    count = tmp_path / "invocations.txt"
    binary = tmp_path / "bin" / "gemini"
    binary.parent.mkdir(parents=True)
    binary.write_text(f'#!/bin/sh\necho "$1" >> "{count}"\necho "Usage: gemini [--output-format]"\n', encoding="utf-8")
    binary.chmod(0o755)
    return count


def backend(tmp_path: Path, **env: str) -> GeminiBackend:
    settings = Settings.from_env(
        {
            "GEMINI_RELAY_PROJECT_ROOT": str(tmp_path),
            "PATH": f"{tmp_path / 'bin'}:/usr/bin:/bin",
            "HOME": str(tmp_path),
            **env,
        }
    )
    return GeminiBackend(settings, ProbeCache())


def invocations(count: Path) -> list[str]:
    return count.read_text(encoding="utf-8").splitlines() if count.exists() else []


async def test_a_warm_server_boots_no_help_probe_at_start_and_probes_when_help_is_asked(tmp_path: Path) -> None:
    count = counting_gemini(tmp_path)
    gemini = backend(tmp_path)
    with anyio.fail_after(BOUND):
        await gemini.warm_up()
    assert invocations(count) == []
    with anyio.fail_after(BOUND):
        probe = await gemini.help()
    assert probe.ok
    assert invocations(count) == ["--help"]


async def test_a_cold_server_probes_help_at_start_once(tmp_path: Path) -> None:
    count = counting_gemini(tmp_path)
    gemini = backend(tmp_path, GEMINI_RELAY_WARM="off")
    with anyio.fail_after(BOUND):
        await gemini.warm_up()
        await gemini.help()
    assert invocations(count) == ["--help"]
