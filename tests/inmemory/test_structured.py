"""Structured output in memory: gemini-ask with jsonSchema validates the answer and asks once for a repair, on the
same conversation; an answer still invalid after that is an error that lists every problem."""

from __future__ import annotations

import json

import pytest

from tests.inmemory.conftest import InMemory, text_of
from tests.inmemory.scripted import answer

pytestmark = pytest.mark.anyio
PERSON = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "email": {"type": "string", "format": "email"}},
    "required": ["name", "email"],
}
GOOD = '{"name": "Ada", "email": "ada@example.com"}'


async def test_a_valid_answer_is_returned_without_a_repair_turn(relay: InMemory) -> None:
    relay.backend.queue(answer(GOOD, pieces=4))
    async with relay.client() as client:
        result = await client.call_tool("gemini-ask", {"prompt": "who?", "jsonSchema": PERSON})
    assert not result.is_error, text_of(result)
    assert json.loads(text_of(result).split("Gemini response:\n", 1)[1]) == json.loads(GOOD)
    assert len(relay.backend.specs) == 1 and relay.backend.specs[0].json_schema == PERSON


async def test_an_invalid_answer_gets_one_repair_turn_on_the_same_conversation(relay: InMemory) -> None:
    relay.backend.queue(answer('```json\n{"name": "Ada", "email": "not-an-email"}\n```'), answer(GOOD))
    async with relay.client() as client:
        result = await client.call_tool("gemini-ask", {"prompt": "who?", "jsonSchema": PERSON})
    assert not result.is_error, text_of(result)
    assert text_of(result).endswith(f"Gemini response:\n{GOOD}")
    first, repair = relay.backend.specs
    assert first.conversation_id is None and repair.conversation_id is not None
    assert "at $.email: 'not-an-email' is not a 'email'" in repair.prompt


async def test_an_answer_still_invalid_after_the_repair_is_an_error_listing_the_problems(relay: InMemory) -> None:
    relay.backend.queue(answer('{"name": 1}'), answer('{"name": 1}'))
    async with relay.client() as client:
        result = await client.call_tool("gemini-ask", {"prompt": "who?", "jsonSchema": PERSON})
    assert result.is_error
    text = text_of(result)
    assert text.startswith("Error executing gemini-ask: The answer does not validate against the JSON Schema")
    assert "- at $: 'email' is a required property" in text and "- at $.name: 1 is not of type 'string'" in text
    assert len(relay.backend.specs) == 2  # one repair, never more
