"""gemini-ask through the real Gemini CLI 0.61.0 and the emulator: what only the real CLI and stdio show — a thread
the CLI resumes and lists, answers of every size and script byte-exact over stdio, and plan mode refusing a write.
How replies read and what the tools send the model is proved in memory: inmemory/test_replies.py,
test_prompts.py, test_changemode.py, test_failures.py."""

from __future__ import annotations

import re

import pytest
from mcp import Client

from tests.fakes.fake_gemini_api import ECHO_PREFIX, UNICODE_TEXT, big_text
from tests.harness import TEST_MODEL, Relay, chunk_bodies, fresh_case, module_event_loop, shared_server
from tests.test_server_surface import text_of

pytestmark = pytest.mark.anyio

# The cases share one server on the cold CLI (tests/harness.py shared_server).
anyio_backend = module_event_loop()
cold_world, cold_client = shared_server("cold")
THREAD = re.compile(r"🧵 conversationId: ([A-Za-z0-9_-]+) \(pass it back to continue this thread\)$", re.MULTILINE)


async def test_a_conversation_id_continues_the_clis_thread_and_gemini_conversations_lists_it(
    cold_world: Relay, cold_client: Client
) -> None:
    fresh_case(cold_world)
    first = await cold_client.call_tool("gemini-ask", {"prompt": "remember the parrot"})
    text = text_of(first)
    match = THREAD.search(text)
    assert match is not None, text
    second = await cold_client.call_tool(
        "gemini-ask", {"prompt": "[[fake:history]] and again", "conversationId": match.group(1)}
    )
    listing = await cold_client.call_tool("gemini-conversations", {"limit": 5})
    assert not first.is_error
    assert text.startswith(f"Gemini response:\n{ECHO_PREFIX}remember the parrot\n\n🧵 conversationId: ")
    assert not second.is_error
    assert text_of(second).startswith("Gemini response:\nturns=2\n\n")
    assert THREAD.search(text_of(second)) is not None and match.group(1) in text_of(second)
    requests = cold_world.main_requests()
    assert [r.model for r in requests] == [TEST_MODEL, TEST_MODEL]
    assert len(requests[1].body["contents"]) == 3  # user, model, user: the history went along
    listed = text_of(listing)
    assert match.group(1) in listed
    assert "remember the parrot" in listed
    assert str(cold_world.project) in listed


async def test_large_and_non_ascii_answers_arrive_byte_exact(cold_world: Relay, cold_client: Client) -> None:
    fresh_case(cold_world)
    result = await cold_client.call_tool("gemini-ask", {"prompt": "[[fake:big:300]]"})
    whole = "".join(await chunk_bodies(cold_client, text_of(result)))  # over 12,000 characters: chunked
    unicode = await cold_client.call_tool("gemini-ask", {"prompt": "[[fake:unicode]]"})
    body = whole.split("\n", 1)[1].rsplit("\n\n🧵", 1)[0]
    assert body == big_text(300)
    assert text_of(unicode).startswith(f"Gemini response:\n{UNICODE_TEXT}\n\n🧵")


async def test_a_tool_action_refused_by_plan_mode_becomes_a_notice(cold_world: Relay, cold_client: Client) -> None:
    fresh_case(cold_world)
    result = await cold_client.call_tool("gemini-ask", {"prompt": "[[fake:write_file]] save it", "mode": "plan"})
    text = text_of(result)
    assert not result.is_error
    assert text.startswith("⚠️ The agent was refused these tool action(s): write_file\n\nGemini response:\nRead it.")
    assert not (cold_world.project / "written.txt").exists()
