"""A server of the warm Gemini CLI has the relay host boot the CLI as the process starts, beside the SDK's import:
a first call that comes at once then waits for one boot, not for the SDK's import and then a boot."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.harness import Relay, processes_using

BOOT_BOUND = 60.0  # a loaded machine; the CLI's boot takes ~1.5 s quiet
# Stands in for the MCP SDK: it says it was reached and never finishes importing, so whatever happens while it
# waits happened before the SDK loaded.
BLOCKING_SDK = """
import pathlib, time
pathlib.Path({marker!r}).write_text("importing")
time.sleep({bound})
raise SystemExit("the SDK stand-in timed out")
"""


def _acp_processes(home: Path) -> list[int]:
    found = []
    for pid in processes_using(home):
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"--acp" in argv:
            found.append(pid)
    return found


def test_the_warm_cli_boots_while_the_server_is_still_importing_the_sdk(relay: Relay, tmp_path: Path) -> None:
    shim = tmp_path / "shim" / "mcp"
    shim.mkdir(parents=True)
    marker = tmp_path / "sdk-import-reached"
    (shim / "__init__.py").write_text(BLOCKING_SDK.format(marker=str(marker), bound=BOOT_BOUND * 2))
    env = {**relay.env, "GEMINI_RELAY_WARM": "on", "PYTHONPATH": str(shim.parent)}
    server = subprocess.Popen(
        [sys.executable, "-m", "gemini_relay"],
        env=env,
        cwd=relay.project,
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + BOOT_BOUND
        while not (_acp_processes(relay.home) and marker.exists()) and time.monotonic() < deadline:
            time.sleep(0.05)  # polls /proc: no event announces another process's child
        assert marker.exists(), "the server never reached the SDK's import"
        assert _acp_processes(relay.home), "no warm CLI was booted before the SDK loaded"
        assert server.poll() is None  # still importing
    finally:
        os.killpg(server.pid, signal.SIGKILL)
        server.wait()
        assert server.stdin is not None
        server.stdin.close()


def test_the_host_boots_its_warm_cli_without_loading_an_http_client() -> None:
    # The host's imports stand between its start and the warm CLI's spawn; httpx2 alone was ~40 ms of them.
    heavy = "('httpx2', 'mcp', 'google.genai')"
    code = f"import sys, gemini_relay.relay_host.host; print(sorted(m for m in {heavy} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "[]"
