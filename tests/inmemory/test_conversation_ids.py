"""A malformed conversationId (a copied 🧵 line, a path, an oversized or NUL-bearing id, an option) is a validation
error naming the field, on the Gemini CLI's backend (scripted) and on the api backend (google-genai on the emulator):
no job is created and no model request is made."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fakes.fake_gemini_api import FakeGeminiApi
from tests.inmemory.conftest import InMemory, on_the_api, text_of

pytestmark = pytest.mark.anyio


def job_dirs(state: Path) -> list[Path]:
    jobs = state / "jobs"
    return sorted(p for p in jobs.iterdir() if p.is_dir()) if jobs.is_dir() else []


@pytest.mark.parametrize(
    "conversation_id",
    ["abc-123 (copied with the rest of the 🧵 line)", "../../etc/passwd", "x" * 5000, "a\x00b", "-rf"],
)
async def test_a_malformed_conversation_id_is_a_validation_error_and_creates_no_job(
    relay: InMemory, emulator: FakeGeminiApi, conversation_id: str
) -> None:
    for overrides in (on_the_api(emulator), {}):
        async with relay.client(**overrides) as client:
            result = await client.call_tool("gemini-ask", {"prompt": "p", "conversationId": conversation_id})
        assert result.is_error
        expected = "Error executing gemini-ask: Invalid arguments for gemini-ask: conversationId:"
        assert text_of(result).startswith(expected)
        assert job_dirs(relay.base / "state") == []
    assert relay.backend.specs == [] and emulator.requests == []
