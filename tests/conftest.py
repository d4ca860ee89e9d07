"""Shared fixtures: the anyio backend for async tests."""

from __future__ import annotations

import pytest


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


pytest_plugins = ["tests.harness", "tests.cpu_report"]


# Orphans: every test world (homes, state dirs, TMPDIRs) lives under this session's basetemp, so any live process
# whose environment names that directory was started for a test. None may outlive the session.

import os  # noqa: E402 - appended section
import time  # noqa: E402
from pathlib import Path  # noqa: E402

from tests.procs import live_processes  # noqa: E402

ORPHAN_WAIT = 10.0  # processes still ending after the last test get this long before they count as orphans
_ORPHANS = pytest.StashKey[list[tuple[int, str]]]()


def _session_basetemp(config: pytest.Config) -> Path | None:
    """The basetemp of this session, or None when no test asked for a temporary directory."""
    factory = getattr(config, "_tmp_path_factory", None)
    basetemp = getattr(factory, "_basetemp", None)
    return basetemp if isinstance(basetemp, Path) else None


def _processes_naming(directory: Path) -> list[tuple[int, str]]:
    """Live, non-zombie processes other than this one whose environment mentions a path under `directory`."""
    marker = os.fsencode(directory) + b"/"
    return [
        (pid, cmdline.replace(b"\0", b" ").strip()[:160].decode("utf-8", errors="replace"))
        for pid, _, cmdline in live_processes(marker)
    ]


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    basetemp = _session_basetemp(session.config)
    left: list[tuple[int, str]] = []
    if basetemp is not None and Path("/proc").is_dir():
        deadline = time.monotonic() + ORPHAN_WAIT
        while (left := _processes_naming(basetemp)) and time.monotonic() < deadline:
            time.sleep(0.05)  # polls /proc: no event tells us an unrelated process has exited
    session.config.stash[_ORPHANS] = left
    if left:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, exitstatus: int, config: pytest.Config) -> None:
    left = config.stash.get(_ORPHANS, [])
    for pid, cmdline in left:
        terminalreporter.write_line(f"left running: pid {pid}: {cmdline}", red=True)
    terminalreporter.write_line(f"orphans after all tests = {len(left)}", red=bool(left), bold=bool(left))
