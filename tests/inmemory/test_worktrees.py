"""`isolation: "worktree"`: an isolated run edits a fresh git worktree, never the project; its answer carries the
branch, diff stat and patch; gemini-apply applies it (dry run first), gemini-discard removes it."""

from __future__ import annotations

import re

import anyio
import mcp_types as types
import pytest
from mcp import Client

from gemini_relay.core.spec import RunSpec
from gemini_relay.errors import RunFailed
from tests.fakes.fake_gemini_api import FakeGeminiApi
from tests.git_repo import GitRepo, tree_hash
from tests.inmemory.conftest import InMemory, on_the_api, text_of
from tests.inmemory.scripted import Script

pytestmark = [pytest.mark.anyio, pytest.mark.spawns_git]
GIT = {"PATH": "/usr/bin:/bin", "GEMINI_RELAY_TOOLSETS": "jobs"}
APP = "def main():\n    return 1\n"
BRANCH = re.compile(r"gemini-relay/wt-[0-9a-f]{12}")


def agent_edits(spec: RunSpec) -> None:
    """What the agent does in its working directory: change a file and add one."""
    (spec.cwd / "app.py").write_text("def main():\n    return 2\n", encoding="utf-8")
    (spec.cwd / "notes.md").write_text("# Notes\n", encoding="utf-8")


def branch_of(result: types.CallToolResult) -> str:
    found = BRANCH.search(text_of(result))
    assert found is not None, text_of(result)
    return found.group(0)


async def isolated_ask(client: Client, prompt: str = "bump it") -> types.CallToolResult:
    return await client.call_tool("gemini-ask", {"prompt": prompt, "isolation": "worktree"})


async def test_an_isolated_ask_leaves_the_project_untouched_and_gemini_apply_applies_its_patch(
    relay: InMemory,
) -> None:
    repo = GitRepo.create(relay.project, {"app.py": APP})
    relay.backend.on_run = agent_edits
    before = tree_hash(relay.project)
    async with relay.client(**GIT) as client:
        result = await isolated_ask(client)
        assert not result.is_error, text_of(result)
        assert tree_hash(relay.project) == before
        text, branch = text_of(result), branch_of(result)
        assert "2 files changed" in text and "-    return 1\n+    return 2" in text and "+# Notes" in text
        assert result.meta is not None and result.meta["worktree"]["files"] == ["app.py", "notes.md"]
        assert relay.backend.specs[0].cwd != relay.project and relay.backend.specs[0].mode == "accept-edits"
        applied = await client.call_tool("gemini-apply", {"branch": branch})
        assert not applied.is_error, text_of(applied)
        assert (relay.project / "app.py").read_text(encoding="utf-8") == "def main():\n    return 2\n"
        assert (relay.project / "notes.md").read_text(encoding="utf-8") == "# Notes\n"
        discarded = await client.call_tool("gemini-discard", {"branch": branch})
        assert not discarded.is_error, text_of(discarded)
    assert branch not in repo.git("branch", "--list")
    assert repo.git("worktree", "list").count("\n") == 1
    assert not any((relay.base / "state" / "worktrees").iterdir())


async def test_gemini_apply_refuses_a_conflicting_patch_naming_the_files_and_changes_nothing(relay: InMemory) -> None:
    GitRepo.create(relay.project, {"app.py": APP})
    relay.backend.on_run = agent_edits
    async with relay.client(**GIT) as client:
        branch = branch_of(await isolated_ask(client))
        (relay.project / "app.py").write_text("def main():\n    return 3\n", encoding="utf-8")  # the user's own edit
        before = tree_hash(relay.project)
        refused = await client.call_tool("gemini-apply", {"branch": branch})
    assert refused.is_error
    assert "does not apply cleanly" in text_of(refused) and "conflicting files: app.py" in text_of(refused)
    assert tree_hash(relay.project) == before


async def test_isolation_is_refused_on_uncommitted_changes_saying_they_are_not_carried_over(relay: InMemory) -> None:
    GitRepo.create(relay.project, {"app.py": APP})
    (relay.project / "draft.txt").write_text("mine\n", encoding="utf-8")
    async with relay.client(**GIT) as client:
        result = await isolated_ask(client)
    assert result.is_error
    assert "uncommitted changes (draft.txt)" in text_of(result) and "not carried over" in text_of(result)
    assert relay.backend.specs == []


async def test_isolation_is_refused_outside_a_git_repository_with_the_reason(relay: InMemory) -> None:
    async with relay.client(**GIT) as client:
        result = await isolated_ask(client)
    assert result.is_error and "is not inside a git repository" in text_of(result)
    assert relay.backend.specs == []


async def test_isolation_is_refused_on_the_api_backend_which_has_no_file_tools(
    relay: InMemory, emulator: FakeGeminiApi
) -> None:
    GitRepo.create(relay.project, {"app.py": APP})
    async with relay.client(**on_the_api(emulator, **GIT)) as client:
        result = await isolated_ask(client)
    assert result.is_error and "has no file tools" in text_of(result)
    assert not (relay.base / "state" / "worktrees").exists() or not any((relay.base / "state" / "worktrees").iterdir())


async def test_a_long_patch_is_chunked_like_any_long_answer(relay: InMemory) -> None:
    GitRepo.create(relay.project, {"app.py": APP})

    def write_a_long_file(spec: RunSpec) -> None:
        (spec.cwd / "long.txt").write_text("".join(f"line {i}\n" for i in range(4000)), encoding="utf-8")

    relay.backend.on_run = write_a_long_file
    async with relay.client(**GIT) as client:
        result = await isolated_ask(client)
        assert not result.is_error and result.meta is not None and result.meta["chunked"] is True
        pieces = [text_of(result)]
        for index in range(2, result.meta["totalChunks"] + 1):
            more = await client.call_tool(
                "gemini-fetch-chunk", {"cacheKey": result.meta["chunkCacheKey"], "chunkIndex": index}
            )
            pieces.append(text_of(more))
    whole = "".join(pieces)
    assert "+line 0\n" in whole and "+line 3999\n" in whole


async def test_an_isolated_gemini_run_is_collected_with_its_patch_which_gemini_apply_applies(relay: InMemory) -> None:
    GitRepo.create(relay.project, {"app.py": APP})
    relay.backend.on_run = agent_edits
    before = tree_hash(relay.project)
    async with relay.client(**GIT) as client:
        started = await client.call_tool("gemini-run", {"prompt": "bump it", "isolation": "worktree"})
        assert not started.is_error, text_of(started)
        assert started.structured_content is not None
        job = started.structured_content["job_id"]
        collected = await client.call_tool("gemini-wait", {"jobId": job})
        assert not collected.is_error and collected.structured_content is not None, text_of(collected)
        assert tree_hash(relay.project) == before
        worktree = collected.structured_content["worktree"]
        assert worktree["files"] == ["app.py", "notes.md"] and "-    return 1" in text_of(collected)
        applied = await client.call_tool("gemini-apply", {"branch": worktree["branch"]})
        assert not applied.is_error, text_of(applied)
    assert (relay.project / "app.py").read_text(encoding="utf-8") == "def main():\n    return 2\n"


async def test_an_isolated_run_that_fails_leaves_no_worktree(relay: InMemory) -> None:
    repo = GitRepo.create(relay.project, {"app.py": APP})
    relay.backend.on_run = agent_edits
    relay.backend.queue(Script(error=RunFailed("upstream broke")))
    async with relay.client(**GIT) as client:
        result = await isolated_ask(client)
    assert result.is_error
    assert "gemini-relay/" not in repo.git("branch", "--list")
    assert not any((relay.base / "state" / "worktrees").iterdir())


async def test_a_retried_isolated_run_returns_its_job_and_makes_no_second_worktree(relay: InMemory) -> None:
    GitRepo.create(relay.project, {"app.py": APP})
    args = {"prompt": "bump it", "isolation": "worktree", "idempotencyKey": "retry-1"}
    async with relay.client(**GIT) as client:
        first = await client.call_tool("gemini-run", args)
        second = await client.call_tool("gemini-run", args)
    assert first.structured_content is not None and second.structured_content is not None, text_of(second)
    assert second.structured_content["job_id"] == first.structured_content["job_id"]
    assert len(list((relay.base / "state" / "worktrees").glob("wt-*.json"))) == 1


async def test_a_worktree_is_neither_applied_nor_discarded_while_its_job_runs(relay: InMemory) -> None:
    repo = GitRepo.create(relay.project, {"app.py": APP})
    release = anyio.Event()
    relay.backend.queue(Script(("working",), hold=release))
    async with relay.client(**GIT) as client:
        started = await client.call_tool("gemini-run", {"prompt": "bump it", "isolation": "worktree"})
        assert started.structured_content is not None, text_of(started)
        branch = {"branch": started.structured_content["worktree"]["branch"]}
        refused = [await client.call_tool(tool, branch) for tool in ("gemini-apply", "gemini-discard")]
        release.set()
        await client.call_tool("gemini-wait", {"jobId": started.structured_content["job_id"]})
        removed = await client.call_tool("gemini-discard", branch)
    assert all(r.is_error and "is still running in" in text_of(r) for r in refused)
    assert not removed.is_error and "gemini-relay/" not in repo.git("branch", "--list")
