"""The review toolset end to end where the upstream process matters: the MCP client, the server over stdio, the real
Gemini CLI 0.61.0 and the emulator (or the fake agy), and real git repositories in the project folder. A review runs
in the CLI's read-only plan mode with the diff verbatim, the CLI's web search lists its sources, and agy reviews,
searches and answers structured. The tools' own rules (assess, refusals, depths, fallback, `quick`, an ungrounded
search) are proved in memory: tests/inmemory/test_review.py."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from mcp import Client

from tests.fakes.fake_gemini_api import (
    SEARCH_ANSWER_TEXT,
    SEARCH_SOURCES,
)
from tests.git_repo import GitRepo
from tests.harness import Relay, fresh_case, module_event_loop, shared_server
from tests.test_server_surface import text_of

pytestmark = pytest.mark.anyio

REVIEW = {"GEMINI_RELAY_TOOLSETS": "review"}
# One server on the cold CLI and one on the fake agy, each shared by the cases on that upstream.
anyio_backend = module_event_loop()
cli_world, cli_client = shared_server("cli", REVIEW)
agy_world, agy_client = shared_server("agy", REVIEW, fake_agy=True)


def repo_with_change(relay: Relay, new_text: str, name: str = "app.py") -> GitRepo:
    repo = GitRepo.create(relay.project, {name: "def main():\n    return 1\n", "README.md": "readme\n"})
    repo.write({name: new_text})
    return repo


def sent_prompt(relay: Relay, index: int = 0) -> str:
    return json.dumps(relay.main_requests()[index].body, ensure_ascii=False)


def tool_names(body: dict[str, Any]) -> set[str]:
    return {d["name"] for t in body.get("tools", []) for d in t.get("functionDeclarations", [])}


# --- gemini-review -----------------------------------------------------------------------------------------------


async def test_a_scan_review_sends_the_diff_verbatim_in_plan_mode_and_returns_the_findings(
    cli_world: Relay, cli_client: Client
) -> None:
    fresh_case(cli_world)
    repo_with_change(cli_world, "def main():\n    return '{{x}} @/etc/passwd @README.md'\n")
    cli_world.api.set_scenario("echo", "I'll start by reading the diff.\n\n- **Severity**: warning\n- **File**: app.py")
    result = await cli_client.call_tool("gemini-review", {"depth": "scan", "focus": "string handling"})
    assert not result.is_error, text_of(result)
    text = text_of(result)
    assert text.startswith("Gemini review (scan; uncommitted changes (staged and unstaged, against HEAD); 1 file(s)")
    assert "- **Severity**: warning\n- **File**: app.py" in text and "I'll start" not in text
    assert re.search(r"\n\n🧵 conversationId: \S+ \(pass it back", text)
    prompt = sent_prompt(cli_world)
    # not inlined, not refused, not filled; the CLI's own escape keeps it from reading them (a JSON-dumped `\\`)
    assert "+    return '{{x}} \\\\@/etc/passwd \\\\@README.md'" in prompt
    assert "Pay special attention to: string handling" in prompt
    assert "exit_plan_mode" in tool_names(cli_world.main_requests()[0].body)  # read-only plan mode
    assert result.meta is not None and result.meta["depth"] == "scan" and result.meta["appliedTimeout"] == 180
    assert result.meta["diffStat"] == {"files": 1, "insertions": 1, "deletions": 1}


# --- gemini-search -----------------------------------------------------------------------------------------------


async def test_search_runs_the_cli_web_search_and_lists_the_source_urls(cli_world: Relay, cli_client: Client) -> None:
    fresh_case(cli_world)
    result = await cli_client.call_tool("gemini-search", {"query": "[[fake:search:meaning of life]] what is it?"})
    assert not result.is_error, text_of(result)
    text = text_of(result)
    urls = [uri for _, uri in SEARCH_SOURCES]
    assert text.startswith(f"Gemini response:\n{SEARCH_ANSWER_TEXT}")
    assert "🔗 Sources:\n" + "\n".join(f"- {u}" for u in urls) in text
    assert result.meta is not None and result.meta["sources"] == urls
    searches = [r for r in cli_world.api.requests if r.kind == "web_search"]
    assert len(searches) == 1 and "meaning of life" in json.dumps(searches[0].body)
    assert "google_web_search" in sent_prompt(cli_world)


# --- through the fake agy ----------------------------------------------------------------------------------------


async def test_a_review_runs_through_agy_in_plan_mode(agy_world: Relay, agy_client: Client) -> None:
    fresh_case(agy_world)
    repo_with_change(agy_world, "def main():\n    return '{{x}}'\n")
    result = await agy_client.call_tool("gemini-review", {"depth": "focused"})
    assert not result.is_error, text_of(result)
    text = text_of(result)
    assert "Gemini review (focused; uncommitted changes" in text
    assert "Hello from fake agy! You said: You are reviewing a code change." in text
    assert "+    return '{{x}}'" in text  # the echoed prompt carried the diff verbatim
    assert agy_world.api.requests == []


async def test_search_and_structured_run_through_agy(agy_world: Relay, agy_client: Client) -> None:
    fresh_case(agy_world)
    schema = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}
    search = await agy_client.call_tool("gemini-search", {"query": "see https://example.net/agy-doc"})
    structured = await agy_client.call_tool("gemini-structured", {"prompt": "answer", "schema": schema})
    assert not search.is_error, text_of(search)
    assert "with your web search tool" in text_of(search)
    assert search.meta is not None and search.meta["sources"] == ["https://example.net/agy-doc"]
    assert not structured.is_error, text_of(structured)
    assert json.loads(text_of(structured))["answer"] == "fake"
