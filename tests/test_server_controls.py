"""Per-call controls end to end, on the upstreams whose process they reach: continueLatest continues the newest
conversation the warm Gemini CLI or agy (through its fake) lists and resumes; timeoutSeconds stops a stalled cold or
warm CLI, saying which limit it hit (agy stopped at its deadline: tests/test_server_agy.py); images reach the model
through the warm CLI and are refused by the cold CLI and agy. The cold CLI lists its conversations as the warm one
does and resumes an id in tests/test_server_ask.py. The in-memory tier covers the tool logic once and the api backend
on the emulator (tests/inmemory/test_controls.py, test_images.py, test_media.py); agy's agents and its image job
controls: tests/test_server_agy.py."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from mcp import Client

from tests.harness import Relay, fresh_case, install_fake_agy, module_event_loop, shared_server
from tests.inmemory.test_images import PNG, ask_and_plan_with_an_image, only_the_png
from tests.test_server_surface import text_of

pytestmark = pytest.mark.anyio

THREAD = re.compile(r"🧵 conversationId: ([A-Za-z0-9_-]+)")


def env_for(relay: Relay, backend: str, tmp_path: Path) -> dict[str, str]:
    if backend == "api":
        return {"GEMINI_MCP_BACKEND": "api", "GEMINI_CLI_PATH": None, "GEMINI_RELAY_STATE_DIR": str(tmp_path / "s")}  # type: ignore[dict-item]
    if backend == "agy":
        agy = install_fake_agy(relay.base / "bin", relay.base / "fake-agy.log")
        return {"GEMINI_MCP_BACKEND": "agy", "AGY_CLI_PATH": str(agy)}
    return {"GEMINI_RELAY_WARM": "on" if backend == "cli-warm" else "off"}


# The timeout and image cases share one server per upstream (the continueLatest cases need a world with no
# conversation yet: theirs are their own).
anyio_backend = module_event_loop()
warm_world, warm_client = shared_server("warm", {"GEMINI_RELAY_WARM": "on"})
cold_world, cold_client = shared_server("cold")
agy_world, agy_client = shared_server("agy", fake_agy=True)
SHARED = {"cli-warm": "warm", "cli-cold": "cold", "agy": "agy"}
Served = tuple[Relay, Client]


@pytest.fixture
def served(request: pytest.FixtureRequest, backend: str) -> Served:
    """The world and client this module's cases on `backend` share, fresh for this case."""
    name = SHARED[backend]
    return fresh_case(request.getfixturevalue(f"{name}_world")), request.getfixturevalue(f"{name}_client")


def thread_of(text: str) -> str:
    found = THREAD.search(text)
    assert found is not None, text
    return found.group(1)


@pytest.mark.parametrize("backend", ["cli-warm", "agy"])
async def test_continue_latest_continues_the_newest_conversation_the_upstream_lists(
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


@pytest.mark.parametrize("backend", ["cli-cold", "cli-warm"])
async def test_a_run_past_its_timeout_seconds_stops_the_cli_naming_that_limit(served: Served, backend: str) -> None:
    _, client = served
    stall = "[[fake:stall]] wait"
    result = await client.call_tool("gemini-ask", {"prompt": stall, "timeoutSeconds": 2})
    assert result.is_error
    text = text_of(result)
    assert "timed out after 2s" in text and "The limit hit was this call's timeoutSeconds (2 s)." in text, text


@pytest.mark.parametrize("backend", ["cli-warm"])
async def test_images_reach_the_model_on_the_backends_that_see_images(served: Served, backend: str) -> None:
    world, client = served
    await ask_and_plan_with_an_image(client, world.project)
    sent = world.api.inline_images()
    # Both calls sent the image (the CLI repeats a turn's parts in its router request too).
    assert len(sent) >= 2 and only_the_png(sent), sent


@pytest.mark.parametrize("backend", ["cli-cold", "agy"])
async def test_images_are_refused_with_the_reason_on_backends_that_cannot_see_them(
    served: Served, backend: str
) -> None:
    world, client = served
    (world.project / "shot.png").write_bytes(PNG)
    result = await client.call_tool("gemini-ask", {"prompt": "what is this", "images": ["shot.png"]})
    assert result.is_error
    assert "takes text prompts only" in text_of(result) and "GEMINI_RELAY_WARM=on" in text_of(result)
