"""Output discipline end to end through the MCP client, the real Gemini CLI 0.61.0 and the emulator: structured
answers (schema checks, the repair turn), the capacity fallback and its deadline, chunking of long answers, the soft
length limit, and the changeMode write guardrail."""

from __future__ import annotations

import json
from typing import Any

import pytest

from gemini_relay.content.chunking import CHUNK_SIZE
from tests.fakes.fake_gemini_api import ECHO_PREFIX, big_text
from tests.git_repo import GitRepo
from tests.harness import CHUNK_FOOTER, TEST_MODEL, Relay, chunk_bodies
from tests.test_server_review import FALLBACK, REVIEW, sent_prompt, tool_names
from tests.test_server_surface import text_of

pytestmark = pytest.mark.anyio


# --- structured output -------------------------------------------------------------------------------------------

PERSON = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "email": {"type": "string", "format": "email"}},
    "required": ["name", "email"],
}


async def test_structured_returns_the_validated_json_alone(relay: Relay) -> None:
    relay.api.set_scenario("json", '{"name": "Ada", "email": "ada@example.com"}')
    async with relay.client(**REVIEW) as client:
        result = await client.call_tool("gemini-structured", {"prompt": "who?", "schema": json.dumps(PERSON)})
    assert not result.is_error, text_of(result)
    assert json.loads(text_of(result)) == {"name": "Ada", "email": "ada@example.com"}
    assert result.meta is not None and result.meta["repaired"] is False
    assert len(relay.main_requests()) == 1
    assert "exit_plan_mode" in tool_names(relay.main_requests()[0].body)


async def test_an_invalid_answer_gets_one_repair_turn_on_the_same_conversation(relay: Relay) -> None:
    bad = '```json\n{"name": "Ada", "email": "not-an-email"}\n```'
    relay.api.set_scenario("json_turns", json.dumps([bad, '{"name": "Ada", "email": "ada@example.com"}']))
    async with relay.client(**REVIEW) as client:
        result = await client.call_tool("gemini-structured", {"prompt": "who?", "schema": PERSON})
    assert not result.is_error, text_of(result)
    assert json.loads(text_of(result))["email"] == "ada@example.com"
    assert result.meta is not None and result.meta["repaired"] is True
    first, second = relay.main_requests()
    repair = second.body["contents"]
    assert len(repair) == 3  # the first turn, the model's answer, the repair turn: one conversation
    assert "at $.email: 'not-an-email' is not a 'email'" in json.dumps(repair[-1])


async def test_an_answer_still_invalid_after_the_repair_turn_is_an_error_listing_the_problems(relay: Relay) -> None:
    relay.api.set_scenario("json_turns", json.dumps([{"name": 1}]))
    async with relay.client(**REVIEW) as client:
        result = await client.call_tool("gemini-structured", {"prompt": "who?", "schema": PERSON})
    assert result.is_error
    text = text_of(result)
    assert text.startswith("Error executing gemini-structured: The answer does not validate against the JSON Schema")
    assert "- at $: 'email' is a required property" in text and "- at $.name: 1 is not of type 'string'" in text
    assert text.endswith('Last answer:\n{"name": 1}')
    assert len(relay.main_requests()) == 2


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
    relay: Relay, arguments: dict[str, Any], message: str
) -> None:
    (relay.project / "logo.png").write_bytes(b"\x89PNG\x00")
    async with relay.client(**REVIEW) as client:
        result = await client.call_tool("gemini-structured", {"prompt": "p", **arguments})
    assert result.is_error and message in text_of(result)
    assert relay.api.requests == []


async def test_structured_files_go_along_with_the_prompt(relay: Relay) -> None:
    (relay.project / "notes.md").write_text("the colour is teal\n", encoding="utf-8")
    relay.api.set_scenario("json", '{"name": "teal", "email": "t@example.com"}')
    async with relay.client(**REVIEW) as client:
        result = await client.call_tool("gemini-structured", {"prompt": "p", "schema": PERSON, "files": ["notes.md"]})
    assert not result.is_error, text_of(result)
    assert "the colour is teal" in sent_prompt(relay)


async def test_ask_json_schema_is_checked_before_spawn_and_repaired_once(relay: Relay) -> None:
    async with relay.client() as client:
        refused = await client.call_tool("gemini-ask", {"prompt": "q", "jsonSchema": {"type": 5}})
        assert relay.api.requests == []
        relay.api.set_scenario("json_turns", json.dumps(['{"name": "A"}', '{"name": "A", "email": "a@example.com"}']))
        result = await client.call_tool("gemini-ask", {"prompt": "q", "jsonSchema": PERSON, "includeUsage": True})
    assert refused.is_error and "jsonSchema is not a valid JSON Schema" in text_of(refused)
    text = text_of(result)
    assert text.endswith('Gemini response:\n{"name": "A", "email": "a@example.com"}')
    assert "🧵" not in text and "📊" not in text
    assert len(relay.main_requests()) == 2


# --- fallback ----------------------------------------------------------------------------------------------------


async def test_ask_falls_back_once_within_the_deadline_and_says_which_model_answered(relay: Relay) -> None:
    async with relay.client() as client:
        result = await client.call_tool("gemini-ask", {"prompt": f"[[fake:unavailable_for:{TEST_MODEL}]] hi"})
    assert not result.is_error, text_of(result)
    text = text_of(result)
    assert text.startswith(f"⚠️ {FALLBACK} answered: {TEST_MODEL} hit a capacity limit (service unavailable, HTTP 503)")
    assert f"Gemini response:\n{ECHO_PREFIX}" in text
    assert [r.model for r in relay.main_requests()] == [TEST_MODEL, FALLBACK]


async def test_no_fallback_when_less_than_ten_seconds_of_the_deadline_remain(relay: Relay) -> None:
    async with relay.client(GEMINI_MCP_TIMEOUT="0.15") as client:  # a 9 s deadline: never 10 s left
        result = await client.call_tool("gemini-ask", {"prompt": f"[[fake:quota_for:{TEST_MODEL}]] hi"})
    assert result.is_error
    assert "Gemini API quota or rate limit exhausted (HTTP 429)" in text_of(result)
    assert [r.model for r in relay.main_requests()] == [TEST_MODEL]


async def test_fallback_none_disables_the_retry(relay: Relay) -> None:
    async with relay.client(GEMINI_FALLBACK_MODEL="none") as client:
        result = await client.call_tool("gemini-ask", {"prompt": f"[[fake:quota_for:{TEST_MODEL}]] hi"})
    assert result.is_error and len(relay.main_requests()) == 1


async def test_a_failing_fallback_reports_both_attempts(relay: Relay) -> None:
    async with relay.client() as client:
        result = await client.call_tool("gemini-ask", {"prompt": "[[fake:quota]] hi"})
    assert result.is_error
    text = text_of(result)
    assert f"(This was the fallback model {FALLBACK}, tried after {TEST_MODEL} hit a capacity limit" in text
    assert len(relay.main_requests()) == 2


# --- chunking and length -----------------------------------------------------------------------------------------


async def test_a_one_megabyte_answer_is_chunked_and_reassembles_byte_exact_through_fetch_chunk(relay: Relay) -> None:
    async with relay.client() as client:
        first = await client.call_tool("gemini-ask", {"prompt": "[[fake:big:1024]]"})
        text = text_of(first)
        bodies = await chunk_bodies(client, text)
        footer = CHUNK_FOOTER.search(text)
        assert footer is not None, text[-300:]
        last = await client.call_tool("gemini-fetch-chunk", {"cacheKey": footer.group(3), "chunkIndex": len(bodies)})
    assert first.meta is not None and first.meta["chunked"] and first.meta["totalChunks"] == len(bodies) > 100
    key = first.meta["chunkCacheKey"]
    assert f'Use gemini-fetch-chunk with cacheKey="{key}" and chunkIndex=2 for the next segment.' in text
    assert all(len(b) <= CHUNK_SIZE for b in bodies)
    assert all(b.endswith("\n") for b in bodies[:-1])  # cut at line ends, never mid-line
    answer = "".join(bodies).removeprefix("Gemini response:\n").rsplit("\n\n🧵 conversationId:", 1)[0]
    assert answer == big_text(1024)
    assert text_of(last).endswith("This is the final chunk; the response is complete.")


async def test_an_answer_under_the_threshold_is_not_chunked(relay: Relay) -> None:
    async with relay.client() as client:
        result = await client.call_tool("gemini-ask", {"prompt": "[[fake:big:11]]"})
    assert "Response chunk" not in text_of(result) and result.meta is None


async def test_max_response_length_is_a_soft_instruction(relay: Relay) -> None:
    async with relay.client() as client:
        result = await client.call_tool("gemini-ask", {"prompt": "explain", "maxResponseLength": 120})
    assert not result.is_error
    assert "explain\\n\\nKeep your response under 120 words." in sent_prompt(relay)


# --- changeMode guardrail ----------------------------------------------------------------------------------------


def edit_answer() -> str:
    return "**FILE: app.py:2**\n```\nOLD:\n    return 1\nNEW:\n    return 2\n```\n"


async def test_change_mode_edits_are_returned_as_data_when_nothing_was_written(relay: Relay) -> None:
    GitRepo.create(relay.project, {"app.py": "def main():\n    return 1\n"})
    relay.api.set_scenario("echo", edit_answer())
    async with relay.client() as client:
        result = await client.call_tool("gemini-ask", {"prompt": "bump it", "changeMode": True})
    assert not result.is_error and "### Edit 1: app.py" in text_of(result)
    assert result.meta is not None
    edit = {"file": "app.py", "startLine": 2, "endLine": 2, "old": "    return 1", "new": "    return 2"}
    assert result.meta["edits"] == [edit]


async def test_change_mode_withholds_the_edits_when_the_agent_wrote_files(relay: Relay) -> None:
    GitRepo.create(relay.project, {"app.py": "def main():\n    return 1\n"})
    async with relay.client() as client:
        result = await client.call_tool(
            "gemini-ask", {"prompt": "[[fake:write_file]] bump it", "changeMode": True, "skipPermissions": True}
        )
    assert not result.is_error, text_of(result)
    text = text_of(result)
    assert text.startswith("⚠️ The agent changed files in the working tree during this run: written.txt.")
    assert "Its edits were withheld" in text and "### Edit" not in text
    assert result.meta == {"appliedWrites": True, "changedFiles": ["written.txt"]}
    assert (relay.project / "written.txt").exists()
