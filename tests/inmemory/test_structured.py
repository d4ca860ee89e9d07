"""Structured output in memory: gemini-ask with jsonSchema validates the answer and asks once for a repair, on the
same conversation; an answer still invalid after that is an error that lists every problem."""

from __future__ import annotations

import json
from typing import Any

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


# --- gemini-structured (the review toolset) and jsonSchema's checks ------------------------------------------------

REVIEW = {"GEMINI_RELAY_TOOLSETS": "review"}


async def test_gemini_structured_returns_the_validated_json_alone_from_a_read_only_run(relay: InMemory) -> None:
    relay.backend.queue(answer(GOOD, pieces=3))
    async with relay.client(**REVIEW) as client:
        result = await client.call_tool("gemini-structured", {"prompt": "who?", "schema": json.dumps(PERSON)})
    assert not result.is_error, text_of(result)
    assert json.loads(text_of(result)) == json.loads(GOOD)
    assert result.meta is not None and result.meta["repaired"] is False
    (spec,) = relay.backend.specs
    assert spec.mode == "plan" and spec.json_schema == PERSON


async def test_gemini_structured_says_in_meta_that_the_answer_was_repaired(relay: InMemory) -> None:
    relay.backend.queue(answer('```json\n{"name": "Ada", "email": "not-an-email"}\n```'), answer(GOOD))
    async with relay.client(**REVIEW) as client:
        result = await client.call_tool("gemini-structured", {"prompt": "who?", "schema": PERSON})
    assert not result.is_error, text_of(result)
    assert json.loads(text_of(result))["email"] == "ada@example.com"
    assert result.meta is not None and result.meta["repaired"] is True
    first, repair = relay.backend.specs
    assert repair.conversation_id is not None and repair.mode == first.mode == "plan"
    assert "at $.email: 'not-an-email' is not a 'email'" in repair.prompt


async def test_gemini_structured_still_invalid_after_the_repair_lists_the_problems_and_the_last_answer(
    relay: InMemory,
) -> None:
    relay.backend.queue(answer('{"name": 1}'), answer('{"name": 1}'))
    async with relay.client(**REVIEW) as client:
        result = await client.call_tool("gemini-structured", {"prompt": "who?", "schema": PERSON})
    assert result.is_error
    text = text_of(result)
    assert text.startswith("Error executing gemini-structured: The answer does not validate against the JSON Schema")
    assert "- at $: 'email' is a required property" in text and "- at $.name: 1 is not of type 'string'" in text
    assert text.endswith('Last answer:\n{"name": 1}')
    assert len(relay.backend.specs) == 2


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"schema": "{oops"}, "schema is not valid JSON"),
        ({"schema": {"type": "objekt"}}, "schema is not a valid JSON Schema"),
        ({"schema": json.dumps({"description": "x" * 21_000})}, "the limit is 20 KB"),
        ({"schema": PERSON, "files": ["../outside.txt"]}, "is outside the project root"),
        ({"schema": PERSON, "files": ["missing.txt"]}, "is not a file in the project root"),
        ({"schema": PERSON, "files": ["logo.png"]}, "is binary; gemini-structured takes text files only"),
    ],
)
async def test_bad_schemas_and_files_are_refused_before_anything_runs(
    relay: InMemory, arguments: dict[str, Any], message: str
) -> None:
    (relay.project / "logo.png").write_bytes(b"\x89PNG\x00")
    (relay.base / "outside.txt").write_text("outside", encoding="utf-8")
    async with relay.client(**REVIEW) as client:
        result = await client.call_tool("gemini-structured", {"prompt": "p", **arguments})
    assert result.is_error and message in text_of(result)
    assert relay.backend.specs == []


async def test_gemini_structured_files_go_along_with_the_prompt(relay: InMemory) -> None:
    (relay.project / "notes.md").write_text("the colour is teal\n", encoding="utf-8")
    relay.backend.queue(answer('{"name": "teal", "email": "t@example.com"}'))
    async with relay.client(**REVIEW) as client:
        result = await client.call_tool("gemini-structured", {"prompt": "p", "schema": PERSON, "files": ["notes.md"]})
    assert not result.is_error, text_of(result)
    assert "the colour is teal" in relay.backend.specs[0].prompt


async def test_an_ask_json_schema_is_checked_before_any_run_and_the_reply_is_bare_json_with_no_thread_or_usage(
    relay: InMemory,
) -> None:
    relay.backend.queue(answer('{"name": "A"}'), answer('{"name": "A", "email": "a@example.com"}'))
    async with relay.client() as client:
        refused = await client.call_tool("gemini-ask", {"prompt": "q", "jsonSchema": {"type": 5}})
        assert relay.backend.specs == []
        result = await client.call_tool("gemini-ask", {"prompt": "q", "jsonSchema": PERSON, "includeUsage": True})
    assert refused.is_error and "jsonSchema is not a valid JSON Schema" in text_of(refused)
    text = text_of(result)
    assert text.endswith('Gemini response:\n{"name": "A", "email": "a@example.com"}')
    assert "🧵" not in text and "📊" not in text
    assert len(relay.backend.specs) == 2
