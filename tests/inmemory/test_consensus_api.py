"""gemini-consensus on the real api backend in memory (google-genai over HTTP to the emulator, which answers each
model its own way): two models answer and one synthesis call names them, with the usage of all three summed; a model
the API fails is reported and the synthesis goes on; a dryRun counts tokens with the API and sends no generate
request. The panel's own rules on the scripted backend: test_consensus.py; the real Gemini CLI and an MCP task:
tests/test_server_consensus.py."""

from __future__ import annotations

import pytest

from tests.consensus_panel import (
    FLASH,
    JUDGE,
    PANEL,
    PRO,
    REVIEW,
    assert_two_answers_and_a_synthesis_naming_them,
    by_model,
    data_of,
    generate_requests,
)
from tests.fakes.fake_gemini_api import FakeGeminiApi
from tests.inmemory.conftest import InMemory, on_the_api, text_of

pytestmark = pytest.mark.anyio


async def test_on_the_api_backend_two_models_answer_and_the_synthesis_names_them(
    relay: InMemory, emulator: FakeGeminiApi
) -> None:
    by_model(emulator, "Flash: no, wait for Monday.")
    async with relay.client(**REVIEW, **on_the_api(emulator)) as client:
        result = await client.call_tool("gemini-consensus", PANEL)
    assert_two_answers_and_a_synthesis_naming_them(data_of(result))
    models = sorted(r.path.split("/models/")[1].split(":")[0] for r in generate_requests(emulator))
    assert models == sorted([PRO, FLASH, JUDGE])
    assert "## Synthesis" in text_of(result) and f"### {PRO}" in text_of(result)


async def test_on_the_api_backend_a_failing_model_is_reported_and_the_synthesis_goes_on(
    relay: InMemory, emulator: FakeGeminiApi
) -> None:
    by_model(emulator, 404)
    async with relay.client(**REVIEW, **on_the_api(emulator)) as client:
        result = await client.call_tool("gemini-consensus", PANEL)
    data = data_of(result)
    flash = next(a for a in data["answers"] if a["model"] == FLASH)
    assert not flash["ok"] and flash["error"] and data["failed"] == [f"{FLASH} (against)"]
    assert data["synthesis"]["ok"] and "must not be counted" in data["synthesis"]["text"]
    assert f"No answer from {FLASH} (against)" in text_of(result)


async def test_on_the_api_backend_a_dry_run_sends_no_generate_request(relay: InMemory, emulator: FakeGeminiApi) -> None:
    async with relay.client(**REVIEW, **on_the_api(emulator)) as client:
        result = await client.call_tool("gemini-consensus", {**PANEL, "dryRun": True})
    data = data_of(result)
    assert data["dry_run"] and [a["model"] for a in data["answers"]] == [PRO, FLASH]
    assert all(a["estimated_usd"] is not None for a in data["answers"])
    assert all(a["token_method"] == "counted" for a in data["answers"])  # the API's countTokens, as gemini-ask's
    assert "counted by the API" in data["token_method"]
    assert generate_requests(emulator) == []
