"""The media toolset through the MCP client and the server over stdio, on the emulator: an async generation is a
durable job that outlives its server and is collected by the next one, and a fresh server continues an image
conversation from its sidecar. Every other media behaviour is proved in memory (tests/inmemory/test_media.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.harness import Relay
from tests.media_results import call_ok, facts

pytestmark = pytest.mark.anyio


def media_env(state: Path, toolsets: str = "media") -> dict[str, str]:
    return {"GEMINI_MCP_BACKEND": "api", "GEMINI_RELAY_TOOLSETS": toolsets, "GEMINI_RELAY_STATE_DIR": str(state)}


async def test_an_async_generation_survives_a_server_restart_and_is_collected(relay: Relay, tmp_path: Path) -> None:
    env = media_env(tmp_path / "state")  # the media toolset brings gemini-status and gemini-wait along
    relay.api.media.operation_polls = 3  # the video is still rendering when the first server exits
    async with relay.client(**env) as client:
        started = await call_ok(client, "gemini-video", {"prompt": "slow waves", "async": True})
    job_id = facts(started)["job_id"]
    assert facts(started)["state"] in ("queued", "starting", "running")
    async with relay.client(**env) as client:
        waited = await call_ok(client, "gemini-wait", {"jobId": job_id, "wait": 30})
        status = facts(await call_ok(client, "gemini-status", {"jobId": job_id}))
        await call_ok(client, "gemini-image-interact", {"input": "a lighthouse"})
    assert facts(waited)["state"] == "done"
    async with relay.client(**env) as client:  # a fresh server has no id in memory: the newest sidecar resumes
        resumed = await call_ok(client, "gemini-image-interact", {"input": "add fog", "continueLast": True})
    assert facts(resumed)["continued_from_sidecar"] is True
    assert status["state"] == "done" and len(status["files"]) == 1 and Path(status["files"][0]).is_file()
    assert relay.api.media.generation_count("video") == 1
