"""Two relay versions on one state dir: one host serves it. A newer server drains an older host and holds a slot of
its cap for each run the older one still has; an older server defers to a newer host (a named failure) and never
replaces it. The "older" relay is this one with its version string replaced in every process it starts."""

from __future__ import annotations

import os
import time
from pathlib import Path

import anyio
import pytest

from gemini_relay.jobs import protocol as wire
from tests.fakes.fake_gemini_api import STALL_TEXT, echo_text
from tests.harness import API_BACKEND, Relay
from tests.host.conftest import host_pids, host_request, state_dir
from tests.test_server_jobs import call_json
from tests.test_server_surface import text_of

pytestmark = pytest.mark.anyio

OLDER = "0.0.1"
# Imported by every Python process started with this PYTHONPATH (the server and the host it starts): the relay's
# version is OLDER before any module reads it.
_SITECUSTOMIZE = """
import os
if os.environ.get("RELAY_TEST_VERSION"):
    import gemini_relay
    gemini_relay.__version__ = os.environ["RELAY_TEST_VERSION"]
"""


def older_relay(relay: Relay) -> dict[str, str | None]:
    """The environment overrides that make a server (and the host it starts) an older relay."""
    site = relay.base / "older-relay"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(_SITECUSTOMIZE, encoding="utf-8")
    path = os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")]))
    return {"PYTHONPATH": path, "RELAY_TEST_VERSION": OLDER}


def test_versions_are_ordered_by_protocol_then_release_and_a_pre_release_comes_before_its_release() -> None:
    is_newer = wire.is_newer
    assert is_newer(3, "0.1.0", than_protocol=3, than_version=OLDER)
    assert not is_newer(3, OLDER, than_protocol=3, than_version="0.1.0")
    assert is_newer(3, "0.10.0", than_protocol=3, than_version="0.9.9")
    assert is_newer(3, "0.1.0", than_protocol=3, than_version="0.1.0rc1")
    assert is_newer(4, "0.0.1", than_protocol=3, than_version="9.0.0")
    assert not is_newer(3, "0.1.0", than_protocol=3, than_version="0.1.0")


async def test_two_versions_on_one_state_dir_share_one_cap_and_the_older_server_defers(hosted: Relay) -> None:
    hosted.env.update({"GEMINI_RELAY_MAX_CONCURRENT": "1", **API_BACKEND})
    jobs = state_dir(hosted) / "jobs"
    async with hosted.client(**older_relay(hosted)) as old, hosted.client() as new:
        stalled = await call_json(old, "gemini-run", {"prompt": "[[fake:stall]] older"})
        with anyio.fail_after(30):
            while not any(STALL_TEXT in _read(out) for out in jobs.glob("*/out.txt")):
                await anyio.sleep(0.05)
        older_host = host_request(hosted, {"op": "status"}, version=OLDER)[1]
        assert older_host["version"] == OLDER

        queued = await call_json(new, "gemini-run", {"prompt": "newer"})  # drains the older host, starts its own
        seen = await call_json(new, "gemini-status", {"jobId": queued["job_id"]})
        newer_host = host_request(hosted, {"op": "status"})[1]
        deferred = await old.call_tool("gemini-ask", {"prompt": "older again"})
        assert host_request(hosted, {"op": "status"})[1]["pid"] == newer_host["pid"]  # not replaced

        released = time.monotonic()
        cancelled = await new.call_tool("gemini-cancel", {"jobId": stalled["job_id"]})
        done = await call_json(new, "gemini-wait", {"jobId": queued["job_id"]})
        with anyio.fail_after(20):  # the drained host exits once its last run has ended
            while older_host["pid"] in host_pids(hosted):
                await anyio.sleep(0.05)
    assert seen["state"] == "queued"  # the older host's run holds the one slot
    assert f"Cancelled job {stalled['job_id']}" in text_of(cancelled)
    assert done["state"] == "done" and done["result"] == echo_text("newer")
    turns = hosted.turn_requests()
    assert [t.scenario for t in turns] == ["stall", "default"]
    assert turns[1].at > released  # the newer host's run started only once the older host's had ended
    text = text_of(deferred)
    assert deferred.is_error and "internal error" not in text and "host_superseded" in text
    assert f"A newer gemini-relay ({newer_host['version']}" in text and "Restart this MCP server" in text
    assert host_pids(hosted) == [newer_host["pid"]]


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
