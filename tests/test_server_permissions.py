"""A permission request of the real warm Gemini CLI (ACP session/request_permission) reaches the MCP client's
elicitation callback over stdio and over HTTP, and the user's choice reaches the CLI: `touch` runs or it does not."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from mcp import Client

from tests.elicitation import Recorder, accept
from tests.harness import Relay, module_event_loop, shared_server
from tests.test_server_surface import text_of
from tests.transports.http_server import http_server

pytestmark = pytest.mark.anyio

WARM = {"GEMINI_RELAY_WARM": "on", "GEMINI_RELAY_WARM_MAX_RSS_MB": "4096"}
PROMPT = "[[fake:shell:touch ran.txt]]"


# The stdio cases ask through one client (and so one server and one warm CLI): each sets the answer its user gives
# and starts with no ran.txt; the client without elicitation and the HTTP transport have their own.
anyio_backend = module_event_loop()
permissions_world, _ = shared_server("permissions")  # its client is the asking one below


@pytest.fixture(scope="module")
def user() -> Recorder:
    return Recorder(None)


@pytest.fixture(scope="module")
async def asking_client(permissions_world: Relay, user: Recorder) -> AsyncIterator[Client]:
    async with permissions_world.asking_client(user, **WARM) as client:
        yield client


def answering(user: Recorder, world: Relay, choice: str) -> Recorder:
    """The shared user, about to answer `choice` to the next questions, with none asked yet and no ran.txt."""
    user.reply, user.asked[:] = accept(choice), []
    (world.project / "ran.txt").unlink(missing_ok=True)
    return user


async def test_allow_over_stdio_runs_the_command_the_cli_asked_about(
    permissions_world: Relay, asking_client: Client, user: Recorder
) -> None:
    recorder = answering(user, permissions_world, "proceed_once")
    result = await asking_client.call_tool("gemini-ask", {"prompt": PROMPT})
    assert not result.is_error, text_of(result)
    assert any("touch ran.txt" in params.message for params in recorder.asked), recorder.asked
    assert (permissions_world.project / "ran.txt").exists()
    assert "The user allowed" in text_of(result)


async def test_deny_over_stdio_keeps_the_command_from_running(
    permissions_world: Relay, asking_client: Client, user: Recorder
) -> None:
    recorder = answering(user, permissions_world, "cancel")
    result = await asking_client.call_tool("gemini-ask", {"prompt": PROMPT})
    assert recorder.asked
    assert not (permissions_world.project / "ran.txt").exists()
    assert "the user refused it" in text_of(result)


async def test_a_client_without_elicitation_gets_the_policy_and_is_told_so(relay: Relay) -> None:
    async with relay.client(**WARM) as client:
        result = await client.call_tool("gemini-ask", {"prompt": PROMPT})
    assert not (relay.project / "ran.txt").exists()
    assert "decided by the call's policy: the MCP client cannot be asked" in text_of(result)


async def test_allow_over_http_runs_the_command(relay: Relay) -> None:
    recorder = Recorder(accept("proceed_once"))
    with http_server(relay, **WARM) as server:
        async with server.client(elicitation=recorder) as client:
            result = await client.call_tool("gemini-ask", {"prompt": PROMPT})
        server.stop()
    assert not result.is_error, text_of(result)
    assert any("touch ran.txt" in params.message for params in recorder.asked), recorder.asked
    assert (relay.project / "ran.txt").exists()


async def test_the_question_names_the_folder_the_command_will_run_in(
    permissions_world: Relay, asking_client: Client, user: Recorder
) -> None:
    recorder = answering(user, permissions_world, "cancel")
    await asking_client.call_tool("gemini-ask", {"prompt": PROMPT})
    asked = [params.message for params in recorder.asked]
    assert asked and all(f"[current working directory {permissions_world.project}]" in message for message in asked), (
        asked
    )
