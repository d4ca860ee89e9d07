"""What a prompt tool sends the model, in memory: maxResponseLength as a soft instruction, gemini-brainstorm's
methodology prompt, and `@file` references the relay inlines from the project — and refuses, before anything runs,
when they leave it."""

from __future__ import annotations

import pytest

from tests.inmemory.conftest import InMemory, text_of

pytestmark = pytest.mark.anyio


async def test_max_response_length_is_a_soft_instruction(relay: InMemory) -> None:
    async with relay.client() as client:
        result = await client.call_tool("gemini-ask", {"prompt": "explain", "maxResponseLength": 120})
    assert not result.is_error
    assert "explain\n\nKeep your response under 120 words." in relay.backend.specs[0].prompt


async def test_brainstorm_builds_the_methodology_prompt(relay: InMemory) -> None:
    async with relay.client() as client:
        result = await client.call_tool(
            "gemini-brainstorm", {"prompt": "onboarding", "methodology": "scamper", "ideaCount": 5}
        )
    assert not result.is_error
    sent = relay.backend.specs[0].prompt
    assert "BRAINSTORMING SESSION" in sent and "SCAMPER" in sent and "onboarding" in sent


async def test_an_at_reference_inlines_the_file_into_what_the_model_is_sent(relay: InMemory) -> None:
    (relay.project / "notes.md").write_text("the secret word is aubergine\n", encoding="utf-8")
    async with relay.client() as client:
        result = await client.call_tool("gemini-ask", {"prompt": "summarise @notes.md please"})
    assert not result.is_error
    sent = relay.backend.specs[0].prompt
    assert "the secret word is aubergine" in sent
    assert "----- BEGIN FILE: notes.md -----" in sent


@pytest.mark.parametrize("token", ["@../outside.txt", "@/etc/passwd", "@~/.ssh/id_rsa", "@link/passwd"])
async def test_a_reference_that_leaves_the_project_refuses_the_call_before_anything_runs(
    relay: InMemory, token: str
) -> None:
    (relay.base / "outside.txt").write_text("outside", encoding="utf-8")
    (relay.project / "link").symlink_to("/etc")
    async with relay.client() as client:
        result = await client.call_tool("gemini-ask", {"prompt": f"read {token}"})
    assert result.is_error
    assert text_of(result).startswith("Error executing gemini-ask: Refusing @")
    assert relay.backend.specs == []
