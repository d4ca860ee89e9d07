"""Failures as the server presents them, in memory: each failure class the Gemini CLI 0.61.0 reports (classified from
its recorded streams in tests/data/streams, as the backend classifies a live run) reaches the caller as
`Error executing <tool>: <what happened>` with the classified words and never the CLI's raw `[API Error:` text. The
CLI's side (its streams, exit codes and messages live) is proved by tests/backends (gemini_cli/test_errors.py, the
warm/cold parity matrix); test_server_runs.py keeps one classified failure through the real CLI over stdio."""

from __future__ import annotations

import pytest

from tests.backends.gemini_cli.test_errors import INDEX, classify
from tests.inmemory.conftest import InMemory, text_of
from tests.inmemory.scripted import Script

pytestmark = pytest.mark.anyio


def recorded(scenario: str, conversation_id: str | None = None) -> Script:
    """A run that fails as the real CLI's recorded `scenario` is classified."""
    error = classify(scenario, conversation_id=conversation_id)
    assert error is not None, scenario
    return Script(deltas=(), error=error)


@pytest.mark.parametrize(
    ("scenario", "expected"),
    [
        ("quota", "Gemini API quota or rate limit exhausted (HTTP 429): You exceeded your current quota"),
        ("quota_daily", "Gemini API quota or rate limit exhausted (HTTP 429): You have exhausted your daily quota"),
        ("error_500", "The Gemini API had an internal error (HTTP 500)"),
        ("error_503", "The Gemini API is overloaded or unavailable (HTTP 503): The model is overloaded."),
        ("error_400", "The Gemini API rejected the request (HTTP 400)"),
        ("error_403", "The Gemini API refused the credentials (HTTP 403)"),
        ("error_404", "Model not found: models/gemini-2.5-pro is not found"),
        ("nonjson", "Incomplete JSON segment at the end"),
        ("empty", "Gemini returned no usable answer: The model returned an empty response"),
        ("safety", "Gemini returned no usable answer: The model response was blocked"),
        ("missing_api_key", "Gemini CLI authentication failed"),
        ("untrusted_folder", "GEMINI_CLI_TRUST_WORKSPACE=true"),
    ],
)
async def test_each_failure_the_cli_reports_reaches_the_caller_classified(
    relay: InMemory, scenario: str, expected: str
) -> None:
    relay.backend.queue(recorded(scenario), recorded(scenario))  # a capacity failure's fallback fails the same way
    async with relay.client() as client:
        result = await client.call_tool("gemini-ask", {"prompt": "hi"})
    assert result.is_error
    text = text_of(result)
    assert text.startswith("Error executing gemini-ask: ")
    assert expected in text
    assert "[API Error:" not in text


async def test_a_missing_key_names_the_variable_and_an_untrusted_folder_names_the_folder(relay: InMemory) -> None:
    relay.backend.queue(recorded("missing_api_key"), recorded("untrusted_folder"))
    async with relay.client() as client:
        auth = await client.call_tool("gemini-ask", {"prompt": "hi"})
        trust = await client.call_tool("gemini-ask", {"prompt": "hi"})
    assert "GEMINI_API_KEY" in text_of(auth)
    assert "does not trust the folder " in text_of(trust)


async def test_an_unknown_conversation_id_is_refused_with_the_way_forward(relay: InMemory) -> None:
    conversation_id = INDEX["resume_unknown"]["argv_flags"][3]
    relay.backend.queue(recorded("resume_unknown", conversation_id))
    async with relay.client() as client:
        result = await client.call_tool("gemini-ask", {"prompt": "hi", "conversationId": conversation_id})
    assert result.is_error
    text = text_of(result)
    assert text.startswith(f"Error executing gemini-ask: Unknown conversationId {conversation_id}")
    assert "gemini-conversations" in text
    assert relay.backend.specs[0].conversation_id == conversation_id
