"""The review toolset and output discipline end to end: the MCP client, the server over stdio, the real Gemini CLI
0.61.0 and the emulator (or the fake agy), and real git repositories in the project folder."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from mcp.shared.exceptions import MCPError

from tests.fakes.fake_gemini_api import (
    SEARCH_ANSWER_TEXT,
    SEARCH_SOURCES,
)
from tests.git_repo import GitRepo
from tests.harness import TEST_MODEL, Relay
from tests.test_server_surface import text_of

pytestmark = pytest.mark.anyio

REVIEW = {"GEMINI_RELAY_TOOLSETS": "review"}
FALLBACK = "gemini-2.5-flash"


def repo_with_change(relay: Relay, new_text: str, name: str = "app.py") -> GitRepo:
    repo = GitRepo.create(relay.project, {name: "def main():\n    return 1\n", "README.md": "readme\n"})
    repo.write({name: new_text})
    return repo


def sent_prompt(relay: Relay, index: int = 0) -> str:
    return json.dumps(relay.main_requests()[index].body, ensure_ascii=False)


def tool_names(body: dict[str, Any]) -> set[str]:
    return {d["name"] for t in body.get("tools", []) for d in t.get("functionDeclarations", [])}


# --- gemini-assess -----------------------------------------------------------------------------------------------


async def test_assess_reports_a_code_diff_with_depth_estimates_without_any_model_call(relay: Relay) -> None:
    repo_with_change(relay, "def main():\n    return 2\n\n\ndef helper():\n    return 3\n")
    async with relay.client(**REVIEW) as client:
        result = await client.call_tool("gemini-assess", {})
    assert not result.is_error, text_of(result)
    text = text_of(result)
    assert "Files: 1 changed (+5 / -1)" in text and "Kind: code" in text and "Complexity: trivial" in text
    assert "- scan (~30 s)" in text and "- focused (~40 s)" in text and "- deep (~85 s)" in text
    assert result.meta is not None
    assert result.meta["changedFiles"] == ["app.py"] and result.meta["diffKind"] == "code"
    assert [s["depth"] for s in result.meta["suggestions"]] == ["scan", "focused", "deep"]
    assert relay.api.requests == []


async def test_assess_refuses_a_ref_that_could_be_an_option_before_running_git(relay: Relay) -> None:
    GitRepo.create(relay.project, {"a.py": "a\n"})
    async with relay.client(**REVIEW) as client:
        result = await client.call_tool("gemini-assess", {"base": "--output=/tmp/pwned"})
    assert result.is_error
    expected = "Error executing gemini-assess: base '--output=/tmp/pwned' is not a plain git ref"
    assert text_of(result).startswith(expected)


async def test_the_review_tools_exist_only_with_the_review_toolset(relay: Relay) -> None:
    async with relay.client() as client:
        names = [t.name for t in (await client.list_tools()).tools]
        with pytest.raises(MCPError, match="Unknown tool: gemini-assess"):
            await client.call_tool("gemini-assess", {})
    assert "gemini-review" not in names and "gemini-consensus" not in names
    async with relay.client(**REVIEW) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    review_tools = ["gemini-assess", "gemini-review", "gemini-search", "gemini-structured", "gemini-consensus"]
    assert list(tools)[-5:] == review_tools  # the toolset's order: gemini-consensus joined last
    for name in review_tools:
        annotations = tools[name].annotations
        assert annotations is not None and annotations.read_only_hint and not annotations.destructive_hint
    assess = tools["gemini-assess"].annotations
    assert assess is not None and assess.idempotent_hint and not assess.open_world_hint


# --- gemini-review -----------------------------------------------------------------------------------------------


async def test_a_scan_review_sends_the_diff_verbatim_in_plan_mode_and_returns_the_findings(relay: Relay) -> None:
    repo_with_change(relay, "def main():\n    return '{{x}} @/etc/passwd @README.md'\n")
    relay.api.set_scenario("echo", "I'll start by reading the diff.\n\n- **Severity**: warning\n- **File**: app.py")
    async with relay.client(**REVIEW) as client:
        result = await client.call_tool("gemini-review", {"depth": "scan", "focus": "string handling"})
    assert not result.is_error, text_of(result)
    text = text_of(result)
    assert text.startswith("Gemini review (scan; uncommitted changes (staged and unstaged, against HEAD); 1 file(s)")
    assert "- **Severity**: warning\n- **File**: app.py" in text and "I'll start" not in text
    assert re.search(r"\n\n🧵 conversationId: \S+ \(pass it back", text)
    prompt = sent_prompt(relay)
    # not inlined, not refused, not filled; the CLI's own escape keeps it from reading them (a JSON-dumped `\\`)
    assert "+    return '{{x}} \\\\@/etc/passwd \\\\@README.md'" in prompt
    assert "Pay special attention to: string handling" in prompt
    assert "exit_plan_mode" in tool_names(relay.main_requests()[0].body)  # read-only plan mode
    assert result.meta is not None and result.meta["depth"] == "scan" and result.meta["appliedTimeout"] == 180
    assert result.meta["diffStat"] == {"files": 1, "insertions": 1, "deletions": 1}


async def test_a_clean_tree_is_reported_without_starting_a_model_run(relay: Relay) -> None:
    GitRepo.create(relay.project, {"a.py": "a\n"})
    async with relay.client(**REVIEW) as client:
        result = await client.call_tool("gemini-review", {})
    assert text_of(result) == "No uncommitted changes found."
    assert relay.api.requests == []


async def test_a_review_outside_a_git_repository_is_a_clear_error(relay: Relay) -> None:
    async with relay.client(**REVIEW) as client:
        result = await client.call_tool("gemini-review", {"depth": "scan"})
    assert result.is_error
    assert "is not inside a git working tree; the review tools need a git repository" in text_of(result)


async def test_a_branch_review_covers_base_to_head_and_an_unknown_base_is_refused(relay: Relay) -> None:
    repo = GitRepo.create(relay.project, {"a.py": "a\n"})
    repo.git("checkout", "-q", "-b", "feature")
    repo.write({"feature.py": "print('feature work')\n"})
    repo.commit("feature")
    async with relay.client(**REVIEW) as client:
        unknown = await client.call_tool("gemini-review", {"base": "nope", "depth": "scan"})
        result = await client.call_tool("gemini-review", {"base": "main", "depth": "focused"})
    assert unknown.is_error and "base 'nope' is not a branch, tag or commit" in text_of(unknown)
    assert not result.is_error, text_of(result)
    assert "focused; main...HEAD; 1 file(s), +1 / -0" in text_of(result)
    assert "print('feature work')" in sent_prompt(relay)
    assert len(relay.main_requests()) == 1


async def test_a_deep_review_reports_a_capacity_failure_instead_of_retrying(relay: Relay) -> None:
    repo_with_change(relay, "QUOTA = '[[fake:quota]]'\n")
    async with relay.client(**REVIEW) as client:
        result = await client.call_tool("gemini-review", {"depth": "deep"})
    assert not result.is_error, text_of(result)
    text = text_of(result)
    assert text.startswith("The deep review could not be completed: Gemini reported a capacity failure")
    assert "No retry or fallback model was tried" in text
    assert result.meta is not None
    failure = result.meta["capacityFailure"]
    assert failure["statusCode"] == 429 and failure["kind"] in ("quota", "resource_exhausted")
    assert len(relay.main_requests()) == 1  # no retry, no fallback
    prompt = sent_prompt(relay)
    assert "AGENTS.md, GEMINI.md" in prompt and "`git diff HEAD -U5`" in prompt


async def test_a_focused_review_falls_back_to_the_fallback_model_on_a_capacity_failure(relay: Relay) -> None:
    repo_with_change(relay, f"MARK = '[[fake:quota_for:{TEST_MODEL}]]'\n")
    async with relay.client(**REVIEW) as client:
        result = await client.call_tool("gemini-review", {"depth": "focused"})
    assert not result.is_error, text_of(result)
    text = text_of(result)
    assert text.startswith(f"⚠️ {FALLBACK} answered: {TEST_MODEL} hit a capacity limit")
    assert [r.model for r in relay.main_requests()] == [TEST_MODEL, FALLBACK]
    assert result.meta is not None and result.meta["model"] == FALLBACK


async def test_quick_is_deprecated_but_honoured(relay: Relay) -> None:
    repo_with_change(relay, "x = 2\n")
    async with relay.client(**REVIEW) as client:
        result = await client.call_tool("gemini-review", {"quick": True})
    text = text_of(result)
    assert text.startswith("⚠️ quick is deprecated; use depth (it was read as depth scan).")
    assert "Gemini review (scan;" in text


# --- gemini-search -----------------------------------------------------------------------------------------------


async def test_search_runs_the_cli_web_search_and_lists_the_source_urls(relay: Relay) -> None:
    async with relay.client(**REVIEW) as client:
        result = await client.call_tool("gemini-search", {"query": "[[fake:search:meaning of life]] what is it?"})
    assert not result.is_error, text_of(result)
    text = text_of(result)
    urls = [uri for _, uri in SEARCH_SOURCES]
    assert text.startswith(f"Gemini response:\n{SEARCH_ANSWER_TEXT}")
    assert "🔗 Sources:\n" + "\n".join(f"- {u}" for u in urls) in text
    assert result.meta is not None and result.meta["sources"] == urls
    searches = [r for r in relay.api.requests if r.kind == "web_search"]
    assert len(searches) == 1 and "meaning of life" in json.dumps(searches[0].body)
    assert "google_web_search" in sent_prompt(relay)


async def test_a_search_answer_without_urls_is_flagged_as_ungrounded(relay: Relay) -> None:
    async with relay.client(**REVIEW) as client:
        result = await client.call_tool("gemini-search", {"query": "anything", "maxResponseLength": 50})
    text = text_of(result)
    assert text.startswith("⚠️ The answer cites no source URLs; treat it as not grounded in a web search.")
    assert "Keep your response under 50 words." in sent_prompt(relay)


# --- through the fake agy ----------------------------------------------------------------------------------------


async def test_a_review_runs_through_agy_in_plan_mode(agy_relay: Relay) -> None:
    repo_with_change(agy_relay, "def main():\n    return '{{x}}'\n")
    async with agy_relay.client(**REVIEW) as client:
        result = await client.call_tool("gemini-review", {"depth": "focused"})
    assert not result.is_error, text_of(result)
    text = text_of(result)
    assert "Gemini review (focused; uncommitted changes" in text
    assert "Hello from fake agy! You said: You are reviewing a code change." in text
    assert "+    return '{{x}}'" in text  # the echoed prompt carried the diff verbatim
    assert agy_relay.api.requests == []


async def test_search_and_structured_run_through_agy(agy_relay: Relay) -> None:
    schema = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}
    async with agy_relay.client(**REVIEW) as client:
        search = await client.call_tool("gemini-search", {"query": "see https://example.net/agy-doc"})
        structured = await client.call_tool("gemini-structured", {"prompt": "answer", "schema": schema})
    assert not search.is_error, text_of(search)
    assert "with your web search tool" in text_of(search)
    assert search.meta is not None and search.meta["sources"] == ["https://example.net/agy-doc"]
    assert not structured.is_error, text_of(structured)
    assert json.loads(text_of(structured))["answer"] == "fake"
