"""The review toolset in memory, on real git repositories: gemini-assess reads the diff and calls no model, a ref
that could be an option is refused before git runs, the tools exist only with the review toolset, a clean tree or no
repository needs no run, a branch review covers base...HEAD, a focused review falls back on a capacity failure,
`quick` is read as depth scan, and a search answer citing no URL is flagged. What the real Gemini CLI shows (plan
mode, the diff verbatim, its web search's sources) and agy's review: tests/test_server_review.py."""

from __future__ import annotations

import pytest
from mcp import MCPError

from tests.git_repo import GitRepo
from tests.inmemory.conftest import InMemory, text_of
from tests.inmemory.scripted import answer
from tests.inmemory.test_fallback import FALLBACK, MODEL, quota

pytestmark = [pytest.mark.anyio, pytest.mark.spawns_git]

REVIEW = {"GEMINI_RELAY_TOOLSETS": "review", "PATH": "/usr/bin:/bin"}  # the review tools run git


def repo_with_change(relay: InMemory, new_text: str, name: str = "app.py") -> GitRepo:
    repo = GitRepo.create(relay.project, {name: "def main():\n    return 1\n", "README.md": "readme\n"})
    repo.write({name: new_text})
    return repo


async def test_assess_reports_a_code_diff_with_depth_estimates_without_any_model_call(relay: InMemory) -> None:
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
    assert relay.backend.specs == []


async def test_assess_refuses_a_ref_that_could_be_an_option_before_running_git(relay: InMemory) -> None:
    GitRepo.create(relay.project, {"a.py": "a\n"})
    async with relay.client(**REVIEW) as client:
        result = await client.call_tool("gemini-assess", {"base": "--output=/tmp/pwned"})
    assert result.is_error
    expected = "Error executing gemini-assess: base '--output=/tmp/pwned' is not a plain git ref"
    assert text_of(result).startswith(expected)


async def test_the_review_tools_exist_only_with_the_review_toolset(relay: InMemory) -> None:
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


async def test_a_clean_tree_is_reported_without_starting_a_model_run(relay: InMemory) -> None:
    GitRepo.create(relay.project, {"a.py": "a\n"})
    async with relay.client(**REVIEW) as client:
        result = await client.call_tool("gemini-review", {})
    assert text_of(result) == "No uncommitted changes found."
    assert relay.backend.specs == []


async def test_a_review_outside_a_git_repository_is_a_clear_error(relay: InMemory) -> None:
    async with relay.client(**REVIEW) as client:
        result = await client.call_tool("gemini-review", {"depth": "scan"})
    assert result.is_error
    assert "is not inside a git working tree; the review tools need a git repository" in text_of(result)
    assert relay.backend.specs == []


async def test_a_branch_review_covers_base_to_head_and_an_unknown_base_is_refused(relay: InMemory) -> None:
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
    [spec] = relay.backend.specs
    assert "print('feature work')" in spec.prompt


async def test_a_deep_review_reports_a_capacity_failure_and_its_prompt_points_at_the_instructions_and_the_diff(
    relay: InMemory,
) -> None:
    repo_with_change(relay, "x = 2\n")
    relay.backend.queue(quota())
    async with relay.client(**REVIEW) as client:
        result = await client.call_tool("gemini-review", {"depth": "deep"})
    assert not result.is_error, text_of(result)
    assert text_of(result).startswith("The deep review could not be completed: Gemini reported a capacity failure")
    assert result.meta is not None and result.meta["capacityFailure"]["kind"] in ("quota", "resource_exhausted")
    [spec] = relay.backend.specs  # no retry, no fallback (the rest of it: tests/inmemory/test_fallback.py)
    assert "AGENTS.md, GEMINI.md" in spec.prompt and "`git diff HEAD -U5`" in spec.prompt


async def test_a_focused_review_falls_back_to_the_fallback_model_on_a_capacity_failure(relay: InMemory) -> None:
    repo_with_change(relay, "x = 2\n")
    relay.backend.queue(quota(), answer("- **Severity**: info"))
    async with relay.client(**REVIEW) as client:
        result = await client.call_tool("gemini-review", {"depth": "focused"})
    assert not result.is_error, text_of(result)
    assert text_of(result).startswith(f"⚠️ {FALLBACK} answered: {MODEL} hit a capacity limit")
    assert [s.model for s in relay.backend.specs] == [None, FALLBACK]
    assert result.meta is not None and result.meta["model"] == FALLBACK


async def test_quick_is_deprecated_but_honoured(relay: InMemory) -> None:
    repo_with_change(relay, "x = 2\n")
    async with relay.client(**REVIEW) as client:
        result = await client.call_tool("gemini-review", {"quick": True})
    text = text_of(result)
    assert text.startswith("⚠️ quick is deprecated; use depth (it was read as depth scan).")
    assert "Gemini review (scan;" in text


async def test_a_search_answer_without_urls_is_flagged_as_ungrounded(relay: InMemory) -> None:
    relay.backend.queue(answer("The answer, from memory."))
    async with relay.client(**REVIEW) as client:
        result = await client.call_tool("gemini-search", {"query": "anything", "maxResponseLength": 50})
    text = text_of(result)
    assert text.startswith("⚠️ The answer cites no source URLs; treat it as not grounded in a web search.")
    assert "Keep your response under 50 words." in relay.backend.specs[0].prompt
