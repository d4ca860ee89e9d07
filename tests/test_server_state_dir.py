"""A full or read-only state dir through the MCP client: a durable call is refused with a clear error naming the
state dir, and no half-written job is left behind — with the relay host and without it."""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.harness import Relay
from tests.test_server_surface import text_of

pytestmark = pytest.mark.anyio


def _mount(*args: str) -> bool:
    return subprocess.run(["mount", *args], capture_output=True, check=False).returncode == 0


@contextlib.contextmanager
def small_tmpfs(path: Path) -> Iterator[Path]:
    path.mkdir(parents=True)
    if not _mount("-t", "tmpfs", "-o", "size=512k", "tmpfs", str(path)):
        pytest.skip("mount -t tmpfs is not permitted here")
    try:
        yield path
    finally:  # the read-only bind over the tmpfs, then the tmpfs
        while subprocess.run(["umount", "-l", str(path)], capture_output=True, check=False).returncode == 0:
            pass


def fill(path: Path) -> None:
    with contextlib.suppress(OSError), (path / "filler").open("ab") as filler:
        while True:  # until ENOSPC
            filler.write(b"\0" * 4096)
            filler.flush()


def read_only(path: Path) -> None:
    """A bind mount made read-only: a plain remount is refused while the host holds its log open for writing."""
    assert _mount("--bind", str(path), str(path)) and _mount("-o", "remount,bind,ro", str(path))


@pytest.mark.parametrize("host", ["on", "off"])
@pytest.mark.parametrize("fault", ["full", "read-only"])
async def test_a_run_on_a_full_or_read_only_state_dir_is_refused_clearly_with_no_job_left(
    relay: Relay, fault: str, host: str
) -> None:
    with small_tmpfs(relay.base / "small-state") as state:
        env = {"GEMINI_RELAY_TOOLSETS": "jobs", "GEMINI_RELAY_STATE_DIR": str(state), "GEMINI_RELAY_HOST": host}
        async with relay.client(**env) as client:
            assert text_of(await client.call_tool("gemini-ping", {})) == "Pong!"
            fill(state) if fault == "full" else read_only(state)
            answer = await client.call_tool("gemini-run", {"prompt": "hello"})
            text = text_of(answer)
            jobs = [p.name for p in (state / "jobs").iterdir()]
    assert answer.is_error, text
    assert text.startswith(f"Error executing gemini-run: the state dir {state}"), text
    assert "is not writable (" in text and "set GEMINI_RELAY_STATE_DIR" in text
    assert jobs == []
