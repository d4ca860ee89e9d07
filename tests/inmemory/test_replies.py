"""How a prompt tool's reply reads, in memory: `Gemini response:` and the answer, the conversation id to continue the
thread, the token line on request, the upstream's notices and refused tool actions as ⚠️ lines above the answer,
and gemini-plan's read-only reply (usage, no thread). The Gemini CLI's side of each (its notices, plan mode's
refusals, its sessions) is proved by tests/backends; test_server_ask.py keeps the thread through the real CLI."""

from __future__ import annotations

import re

import pytest

from gemini_relay.core.events import RunNotice, ToolCall, ToolResult
from tests.fakes.fake_gemini_api import UNICODE_TEXT
from tests.inmemory.conftest import InMemory, text_of, without_receipt
from tests.inmemory.scripted import Script, answer

pytestmark = pytest.mark.anyio

THREAD = re.compile(r"🧵 conversationId: ([A-Za-z0-9_-]+) \(pass it back to continue this thread\)$", re.MULTILINE)
EFFORT = "effort low has no Gemini CLI equivalent; the model's default reasoning was used."
AGENT = "agent reviewer is an agy feature; the Gemini CLI ran without it."
SCHEMA = "jsonSchema: the Gemini CLI has no schema flag; the schema was given to the model as an instruction."


async def test_an_answer_ends_with_the_conversation_id_that_a_second_call_continues(relay: InMemory) -> None:
    relay.backend.queue(answer("Hello."), answer("Again."))
    async with relay.client() as client:
        first = await client.call_tool("gemini-ask", {"prompt": "say hi"})
        match = THREAD.search(text_of(first))
        assert match is not None, text_of(first)
        second = await client.call_tool("gemini-ask", {"prompt": "and again", "conversationId": match.group(1)})
    assert text_of(first).startswith("Gemini response:\nHello.\n\n🧵 conversationId: ")
    assert text_of(second).startswith("Gemini response:\nAgain.\n\n")
    assert match.group(1) in text_of(second)
    assert [s.conversation_id for s in relay.backend.specs] == [None, match.group(1)]


async def test_include_usage_appends_the_token_line(relay: InMemory) -> None:
    async with relay.client() as client:
        result = await client.call_tool("gemini-ask", {"prompt": "count", "includeUsage": True})
    assert re.search(r"\n\n📊 \[Tokens: 12 in, 8 out \(3 thinking\)\]$", without_receipt(text_of(result)))


async def test_non_ascii_answers_arrive_intact(relay: InMemory) -> None:
    relay.backend.queue(answer(UNICODE_TEXT, pieces=7))
    async with relay.client() as client:
        result = await client.call_tool("gemini-ask", {"prompt": "unicode"})
    assert text_of(result).startswith(f"Gemini response:\n{UNICODE_TEXT}\n\n🧵")


async def test_options_the_upstream_cannot_honour_reach_it_and_its_notices_come_above_the_answer(
    relay: InMemory,
) -> None:
    relay.backend.queue(Script(("Done.",), events=(RunNotice(EFFORT), RunNotice(AGENT))))
    async with relay.client() as client:
        result = await client.call_tool("gemini-ask", {"prompt": "hi", "effort": "low", "agent": "reviewer"})
    text = text_of(result)
    assert text.startswith(f"⚠️ {EFFORT}")
    assert f"⚠️ {AGENT}" in text
    assert "\n\nGemini response:\nDone." in text
    (spec,) = relay.backend.specs
    assert spec.effort == "low" and spec.agent == "reviewer" and "effort" in spec.explicit


async def test_a_json_schema_reply_is_bare_json_after_the_notice_with_no_thread_or_usage(relay: InMemory) -> None:
    relay.backend.queue(Script(('{"answer":42}',), events=(RunNotice(SCHEMA),)))
    schema = {"type": "object", "properties": {"answer": {"type": "integer"}}, "required": ["answer"]}
    async with relay.client() as client:
        result = await client.call_tool("gemini-ask", {"prompt": "q", "jsonSchema": schema, "includeUsage": True})
    text = text_of(result)
    assert text.startswith("⚠️ jsonSchema: the Gemini CLI has no schema flag")
    assert text.endswith('Gemini response:\n{"answer":42}')
    assert "🧵" not in text and "📊" not in text
    assert relay.backend.specs[0].json_schema == schema


async def test_a_tool_action_the_upstream_refused_becomes_a_notice(relay: InMemory) -> None:
    refused = ToolResult("t1", ok=False, error_type="policy_violation", error_message="denied by policy. Plan Mode.")
    relay.backend.queue(Script(("Read it.",), events=(ToolCall("t1", "write_file"), refused)))
    async with relay.client() as client:
        result = await client.call_tool("gemini-ask", {"prompt": "save it", "mode": "plan"})
    assert not result.is_error
    text = text_of(result)
    assert text.startswith("⚠️ The agent was refused these tool action(s): write_file\n\nGemini response:\nRead it.")
    assert relay.backend.specs[0].mode == "plan"


async def test_plan_runs_read_only_and_reports_usage_but_no_thread(relay: InMemory) -> None:
    relay.backend.queue(answer("1. Add a cache."))
    async with relay.client() as client:
        result = await client.call_tool("gemini-plan", {"task": "add a cache", "context": "keep it small"})
    text = text_of(result)
    assert not result.is_error
    assert text.startswith("1. Add a cache.")
    assert "🧵" not in text and "📊 [Tokens:" in text and "⚠️" not in text
    (spec,) = relay.backend.specs
    assert spec.mode == "plan"
    assert "add a cache" in spec.prompt and "keep it small" in spec.prompt
