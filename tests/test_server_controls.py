"""Per-call controls on every backend, end to end: continueLatest continues the newest conversation of the project
(the Gemini CLI cold and warm, the API, agy through its fake) and timeoutSeconds ends a run that outlives it, saying
which limit it hit. The in-memory tier (tests/inmemory/test_controls.py) covers the refusals and every tool."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.harness import Relay, install_fake_agy
from tests.test_server_surface import text_of

pytestmark = pytest.mark.anyio

THREAD = re.compile(r"🧵 conversationId: ([A-Za-z0-9_-]+)")
BACKENDS = ["cli-cold", "cli-warm", "api", "agy"]


def env_for(relay: Relay, backend: str, tmp_path: Path) -> dict[str, str]:
    if backend == "api":
        return {"GEMINI_MCP_BACKEND": "api", "GEMINI_CLI_PATH": None, "GEMINI_RELAY_STATE_DIR": str(tmp_path / "s")}  # type: ignore[dict-item]
    if backend == "agy":
        agy = install_fake_agy(relay.base / "bin", relay.base / "fake-agy.log")
        return {"GEMINI_MCP_BACKEND": "agy", "AGY_CLI_PATH": str(agy)}
    return {"GEMINI_RELAY_WARM": "on" if backend == "cli-warm" else "off"}


def thread_of(text: str) -> str:
    found = THREAD.search(text)
    assert found is not None, text
    return found.group(1)


@pytest.mark.parametrize("backend", BACKENDS)
async def test_continue_latest_continues_the_newest_conversation_on_every_backend(
    relay: Relay, backend: str, tmp_path: Path
) -> None:
    async with relay.client(**env_for(relay, backend, tmp_path)) as client:
        refused = await client.call_tool("gemini-ask", {"prompt": "hello", "continueLatest": True})
        await client.call_tool("gemini-ask", {"prompt": "older thread"})
        newest = thread_of(text_of(await client.call_tool("gemini-ask", {"prompt": "newest thread"})))
        result = await client.call_tool("gemini-ask", {"prompt": "and again", "continueLatest": True})
    assert refused.is_error and "continueLatest: no saved" in text_of(refused), text_of(refused)
    assert not result.is_error, text_of(result)
    assert thread_of(text_of(result)) == newest


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_run_past_its_timeout_seconds_fails_naming_that_limit_on_every_backend(
    relay: Relay, backend: str, tmp_path: Path
) -> None:
    stall = "[[agy:hang]] wait" if backend == "agy" else "[[fake:stall]] wait"
    async with relay.client(**env_for(relay, backend, tmp_path)) as client:
        result = await client.call_tool("gemini-ask", {"prompt": stall, "timeoutSeconds": 2})
    assert result.is_error
    text = text_of(result)
    assert "timed out after 2s" in text and "The limit hit was this call's timeoutSeconds (2 s)." in text, text
