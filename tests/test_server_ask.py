"""gemini-ask and the other prompt tools through the real Gemini CLI 0.61.0 and the emulator."""

from __future__ import annotations

import json
import re

import pytest

from gemini_relay.content.changemode import NO_EDITS_PREFIX
from tests.fakes.fake_gemini_api import ECHO_PREFIX, UNICODE_TEXT, big_text
from tests.harness import TEST_MODEL, Relay, chunk_bodies
from tests.test_server_surface import text_of

pytestmark = pytest.mark.anyio

THREAD = re.compile(r"🧵 conversationId: ([A-Za-z0-9_-]+) \(pass it back to continue this thread\)$")


async def test_ask_returns_the_answer_with_a_conversation_id_that_a_second_call_continues(relay: Relay) -> None:
    async with relay.client() as client:
        first = await client.call_tool("gemini-ask", {"prompt": "say hi"})
        text = text_of(first)
        match = THREAD.search(text)
        assert match is not None, text
        second = await client.call_tool(
            "gemini-ask", {"prompt": "[[fake:history]] and again", "conversationId": match.group(1)}
        )
    assert not first.is_error
    assert text.startswith(f"Gemini response:\n{ECHO_PREFIX}say hi\n\n🧵 conversationId: ")
    assert not second.is_error
    assert text_of(second).startswith("Gemini response:\nturns=2\n\n")
    assert THREAD.search(text_of(second)) is not None and match.group(1) in text_of(second)
    requests = relay.main_requests()
    assert [r.model for r in requests] == [TEST_MODEL, TEST_MODEL]
    assert len(requests[1].body["contents"]) == 3  # user, model, user: the history went along


async def test_an_unknown_conversation_id_is_refused_with_the_way_forward(relay: Relay) -> None:
    async with relay.client() as client:
        result = await client.call_tool(
            "gemini-ask", {"prompt": "hi", "conversationId": "f418b4f2-6aa2-47e6-a247-419c7e6529a2"}
        )
    assert result.is_error
    text = text_of(result)
    assert text.startswith("Error executing gemini-ask: Unknown conversationId f418b4f2-6aa2-47e6-a247-419c7e6529a2")
    assert "gemini-conversations" in text


async def test_include_usage_appends_the_token_line(relay: Relay) -> None:
    async with relay.client() as client:
        result = await client.call_tool("gemini-ask", {"prompt": "count", "includeUsage": True})
    assert re.search(r"\n\n📊 \[Tokens: 12 in, 8 out \(\d+ thinking\)\]$", text_of(result))


async def test_a_json_schema_reply_is_bare_json_after_the_prefix_with_no_thread_or_usage(relay: Relay) -> None:
    relay.api.set_scenario("json", '{"answer":42}')
    schema = {"type": "object", "properties": {"answer": {"type": "integer"}}, "required": ["answer"]}
    async with relay.client() as client:
        result = await client.call_tool("gemini-ask", {"prompt": "q", "jsonSchema": schema, "includeUsage": True})
    text = text_of(result)
    assert text.endswith('Gemini response:\n{"answer":42}')
    assert "🧵" not in text and "📊" not in text
    assert text.startswith("⚠️ jsonSchema: the Gemini CLI has no schema flag")
    prompt_sent = relay.main_requests()[0].body["contents"][0]["parts"][-1]["text"]
    assert '"required": ["answer"]' in prompt_sent


async def test_options_the_cli_cannot_honour_become_notices(relay: Relay) -> None:
    async with relay.client() as client:
        result = await client.call_tool("gemini-ask", {"prompt": "hi", "effort": "low", "agent": "reviewer"})
    text = text_of(result)
    assert text.startswith("⚠️ effort low has no Gemini CLI equivalent")
    assert "⚠️ agent reviewer is an agy feature" in text
    assert "\n\nGemini response:\n" in text


async def test_an_at_reference_inlines_the_file_and_the_model_sees_it(relay: Relay) -> None:
    (relay.project / "notes.md").write_text("the secret word is aubergine\n", encoding="utf-8")
    async with relay.client() as client:
        result = await client.call_tool("gemini-ask", {"prompt": "summarise @notes.md please"})
    assert not result.is_error
    sent = json.dumps(relay.main_requests()[0].body)
    assert "the secret word is aubergine" in sent
    assert "----- BEGIN FILE: notes.md -----" in sent


@pytest.mark.parametrize("token", ["@../outside.txt", "@/etc/passwd", "@~/.ssh/id_rsa", "@link/passwd"])
async def test_a_reference_that_leaves_the_project_refuses_the_call_before_anything_runs(
    relay: Relay, token: str
) -> None:
    (relay.base / "outside.txt").write_text("outside", encoding="utf-8")
    (relay.project / "link").symlink_to("/etc")
    async with relay.client() as client:
        result = await client.call_tool("gemini-ask", {"prompt": f"read {token}"})
    assert result.is_error
    assert text_of(result).startswith("Error executing gemini-ask: Refusing @")
    assert relay.api.requests == []


async def test_non_ascii_answers_arrive_intact(relay: Relay) -> None:
    async with relay.client() as client:
        result = await client.call_tool("gemini-ask", {"prompt": "[[fake:unicode]]"})
    assert text_of(result).startswith(f"Gemini response:\n{UNICODE_TEXT}\n\n🧵")


async def test_a_large_answer_arrives_byte_exact(relay: Relay) -> None:
    async with relay.client() as client:
        result = await client.call_tool("gemini-ask", {"prompt": "[[fake:big:300]]"})
        whole = "".join(await chunk_bodies(client, text_of(result)))  # over 12,000 characters: chunked
    body = whole.split("\n", 1)[1].rsplit("\n\n🧵", 1)[0]
    assert body == big_text(300)


def edit_block(i: int, size: int) -> str:
    old = "\n".join(f"old line {i}.{n} " + "x" * 40 for n in range(size))
    new = "\n".join(f"new line {i}.{n} " + "y" * 40 for n in range(size))
    return f"**FILE: src/mod{i}.py:{i + 1}**\n```\nOLD:\n{old}\nNEW:\n{new}\n```\n"


async def test_change_mode_renders_edits_and_fetch_chunk_serves_the_rest(relay: Relay) -> None:
    relay.api.set_scenario("echo", "Here are the edits.\n\n" + "\n".join(edit_block(i, 20) for i in range(12)))
    async with relay.client() as client:
        first = await client.call_tool("gemini-ask", {"prompt": "rename things", "changeMode": True})
        text = text_of(first)
        key = re.search(r'gemini-fetch-chunk cacheKey="([0-9a-f]{8})" chunkIndex=2', text)
        assert key is not None, text[-800:]
        second = await client.call_tool("gemini-fetch-chunk", {"cacheKey": key.group(1), "chunkIndex": 2})
        again = await client.call_tool(
            "gemini-ask", {"prompt": "rename things", "chunkCacheKey": key.group(1), "chunkIndex": 2}
        )
    assert text.startswith("ChangeMode Summary") and "\n[CHANGEMODE OUTPUT" in text
    assert "### Edit 1: src/mod0.py" in text
    assert "Replace this exact text:" in text and "With this text:" in text
    assert "🧵" not in text and not text.startswith("Gemini response:")
    assert first.meta is not None and len(first.meta["edits"]) == 12
    assert first.meta["edits"][0]["file"] == "src/mod0.py"
    assert text_of(second) == text_of(again)
    assert "### Edit" in text_of(second)
    assert len(relay.main_requests()) == 1  # paging never reruns the model
    assert "[CHANGEMODE INSTRUCTIONS]" in json.dumps(relay.main_requests()[0].body)


async def test_change_mode_without_edit_blocks_returns_the_raw_text(relay: Relay) -> None:
    relay.api.set_scenario("echo", "I would not change anything.")
    async with relay.client() as client:
        result = await client.call_tool("gemini-ask", {"prompt": "anything?", "changeMode": True})
    assert text_of(result) == f"{NO_EDITS_PREFIX}\n\nI would not change anything."


async def test_plan_runs_read_only_and_reports_usage_but_no_thread(relay: Relay) -> None:
    async with relay.client() as client:
        result = await client.call_tool("gemini-plan", {"task": "add a cache", "context": "keep it small"})
    text = text_of(result)
    assert not result.is_error
    assert text.startswith(ECHO_PREFIX)
    assert "🧵" not in text and "📊 [Tokens:" in text and "⚠️" not in text
    body = relay.main_requests()[0].body
    names = {d["name"] for t in body["tools"] for d in t.get("functionDeclarations", [])}
    assert "exit_plan_mode" in names  # --approval-mode plan reached the CLI


async def test_brainstorm_builds_the_methodology_prompt(relay: Relay) -> None:
    async with relay.client() as client:
        result = await client.call_tool(
            "gemini-brainstorm", {"prompt": "onboarding", "methodology": "scamper", "ideaCount": 5}
        )
    assert not result.is_error
    sent = json.dumps(relay.main_requests()[0].body)
    assert "BRAINSTORMING SESSION" in sent and "SCAMPER" in sent


async def test_conversations_lists_the_session_a_call_created(relay: Relay) -> None:
    async with relay.client() as client:
        first = await client.call_tool("gemini-ask", {"prompt": "remember the parrot"})
        match = THREAD.search(text_of(first))
        assert match is not None
        listing = await client.call_tool("gemini-conversations", {"limit": 5})
    text = text_of(listing)
    assert match.group(1) in text
    assert "remember the parrot" in text
    assert str(relay.project) in text


async def test_a_tool_action_refused_by_plan_mode_becomes_a_notice(relay: Relay) -> None:
    async with relay.client() as client:
        result = await client.call_tool("gemini-ask", {"prompt": "[[fake:write_file]] save it", "mode": "plan"})
    text = text_of(result)
    assert not result.is_error
    assert text.startswith("⚠️ The agent was refused these tool action(s): write_file\n\nGemini response:\nRead it.")
    assert not (relay.project / "written.txt").exists()
