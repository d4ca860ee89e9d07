"""The api backend through the MCP client: GEMINI_MCP_BACKEND=api answers through google-genai, with no Node."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.harness import Relay
from tests.test_server_surface import text_of

pytestmark = pytest.mark.anyio

CONVERSATION = re.compile(r"🧵 conversationId: (\S+)")


def api(relay: Relay, state: Path) -> dict[str, str]:
    # No GEMINI_CLI_PATH and an empty PATH for binaries: nothing but google-genai can answer.
    return {"GEMINI_MCP_BACKEND": "api", "GEMINI_CLI_PATH": None, "GEMINI_RELAY_STATE_DIR": str(state)}  # type: ignore[dict-item]


def job_dirs(state: Path) -> list[Path]:
    jobs = state / "jobs"
    return sorted(p for p in jobs.iterdir() if p.is_dir()) if jobs.is_dir() else []


async def test_ask_on_the_api_backend_answers_through_google_genai_and_continues_its_conversation(
    relay: Relay, tmp_path: Path
) -> None:
    async with relay.client(**api(relay, tmp_path / "state")) as client:
        first = await client.call_tool("gemini-ask", {"prompt": "hello api"})
        text = text_of(first)
        assert not first.is_error, text
        assert text.startswith("Gemini response:\nHello from fake Gemini! You said: hello api")
        found = CONVERSATION.search(text)
        assert found is not None
        relay.api.set_scenario("history")
        second = await client.call_tool("gemini-ask", {"prompt": "again", "conversationId": found.group(1)})
        assert not second.is_error, text_of(second)
        assert "turns=2" in text_of(second)  # the relay replayed the first turn: the API itself is stateless
        listing = await client.call_tool("gemini-conversations", {})
        assert found.group(1) in text_of(listing) and "hello api" in text_of(listing)
    generate = [r for r in relay.api.requests if "GenerateContent" in r.path or "generateContent" in r.path]
    assert generate and all(r.headers.get("x-goog-api-key") == "dummy" for r in generate)
    assert all("google-genai-sdk" in r.headers.get("x-goog-api-client", "") for r in generate)


async def test_models_doctor_and_help_answer_for_the_api_backend(relay: Relay, tmp_path: Path) -> None:
    async with relay.client(**api(relay, tmp_path / "state")) as client:
        models = text_of(await client.call_tool("gemini-models", {}))
        doctor = text_of(await client.call_tool("gemini-doctor", {}))
        help_ = await client.call_tool("gemini-help", {})
    assert "Models for the api backend" in models
    assert "## Gemini API (google-genai)" in doctor and "Active backend: api" in doctor
    assert "dummy" not in doctor  # the key is never shown
    assert not help_.is_error


@pytest.mark.parametrize(
    "conversation_id",
    ["abc-123 (copied with the rest of the 🧵 line)", "../../etc/passwd", "x" * 5000, "a\x00b", "-rf"],
)
async def test_a_malformed_conversation_id_is_a_validation_error_and_creates_no_job(
    relay: Relay, tmp_path: Path, conversation_id: str
) -> None:
    state = tmp_path / "state"
    for overrides in (api(relay, state), {"GEMINI_RELAY_STATE_DIR": str(state)}):
        async with relay.client(**overrides) as client:
            result = await client.call_tool("gemini-ask", {"prompt": "p", "conversationId": conversation_id})
        assert result.is_error
        expected = "Error executing gemini-ask: Invalid arguments for gemini-ask: conversationId:"
        assert text_of(result).startswith(expected)
        assert job_dirs(state) == []
    assert relay.main_requests() == []
