"""The api backend through the MCP client: GEMINI_MCP_BACKEND=api answers through google-genai, with no Node. A
malformed conversationId refused on it and on the CLI's backend: tests/inmemory/test_conversation_ids.py."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from mcp import Client

from tests.harness import Relay, fresh_case, module_event_loop, shared_server
from tests.test_server_surface import text_of

pytestmark = pytest.mark.anyio

CONVERSATION = re.compile(r"🧵 conversationId: (\S+)")


def api(relay: Relay, state: Path) -> dict[str, str]:
    # No GEMINI_CLI_PATH and an empty PATH for binaries: nothing but google-genai can answer.
    return {"GEMINI_MCP_BACKEND": "api", "GEMINI_CLI_PATH": None, "GEMINI_RELAY_STATE_DIR": str(state)}  # type: ignore[dict-item]


# Both cases on one server of the api backend (its state dir the world's own).
API: dict[str, str | None] = {"GEMINI_MCP_BACKEND": "api", "GEMINI_CLI_PATH": None}
anyio_backend = module_event_loop()
api_world, api_client = shared_server("api", API)


async def test_ask_on_the_api_backend_answers_through_google_genai_and_continues_its_conversation(
    api_world: Relay, api_client: Client
) -> None:
    first = await api_client.call_tool("gemini-ask", {"prompt": "hello api"})  # every request checked below is an SDK's
    text = text_of(first)
    assert not first.is_error, text
    assert text.startswith("Gemini response:\nHello from fake Gemini! You said: hello api")
    found = CONVERSATION.search(text)
    assert found is not None
    api_world.api.set_scenario("history")
    second = await api_client.call_tool("gemini-ask", {"prompt": "again", "conversationId": found.group(1)})
    assert not second.is_error, text_of(second)
    assert "turns=2" in text_of(second)  # the relay replayed the first turn: the API itself is stateless
    listing = await api_client.call_tool("gemini-conversations", {})
    assert found.group(1) in text_of(listing) and "hello api" in text_of(listing)
    generate = [r for r in api_world.api.requests if "GenerateContent" in r.path or "generateContent" in r.path]
    assert generate and all(r.headers.get("x-goog-api-key") == "dummy" for r in generate)
    assert all("google-genai-sdk" in r.headers.get("x-goog-api-client", "") for r in generate)


async def test_models_doctor_and_help_answer_for_the_api_backend(api_world: Relay, api_client: Client) -> None:
    fresh_case(api_world)
    models = text_of(await api_client.call_tool("gemini-models", {}))
    doctor = text_of(await api_client.call_tool("gemini-doctor", {}))
    help_ = await api_client.call_tool("gemini-help", {})
    assert "Models for the api backend" in models
    assert "## Gemini API (google-genai)" in doctor and "Active backend: api" in doctor
    assert "dummy" not in doctor  # the key is never shown
    assert not help_.is_error
