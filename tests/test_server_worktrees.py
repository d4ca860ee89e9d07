"""`isolation: "worktree"` end to end over stdio: the agent's file tool writes in a fresh git worktree, never in the
project, on the fake agy and on the real Gemini CLI (cold `-p` and warm ACP) against the API emulator; the answer's
patch is what gemini-apply applies."""

from __future__ import annotations

import re

import pytest

from tests.git_repo import GitRepo, tree_hash
from tests.harness import Relay
from tests.test_server_surface import text_of
from tests.test_server_warm import WARM, acp_processes

pytestmark = pytest.mark.anyio
JOBS = {"GEMINI_RELAY_TOOLSETS": "jobs"}
BRANCH = re.compile(r"gemini-relay/wt-[0-9a-f]{12}")


async def isolated_write_then_apply(
    relay: Relay, prompt: str, written: str, content: str, *, warm: bool = False, **env: str
) -> str:
    """Ask for an isolated write; check the project is untouched and the patch holds the file; apply it."""
    GitRepo.create(relay.project, {"README.md": "# project\n"})
    before = tree_hash(relay.project)
    async with relay.client(**JOBS, **env) as client:
        result = await client.call_tool("gemini-ask", {"prompt": prompt, "isolation": "worktree"})
        text = text_of(result)
        assert not result.is_error, text
        assert bool(acp_processes(relay.home)) is warm  # the warm CLI served it (its process stays), or `-p` did
        assert tree_hash(relay.project) == before
        assert f"+++ b/{written}" in text and f"+{content}" in text, text
        branch = BRANCH.search(text)
        assert branch is not None
        applied = await client.call_tool("gemini-apply", {"branch": branch.group(0)})
        assert not applied.is_error, text_of(applied)
        await client.call_tool("gemini-discard", {"branch": branch.group(0)})
    assert (relay.project / written).read_text(encoding="utf-8") == content + "\n"
    return text


async def test_an_isolated_agy_run_writes_in_its_worktree_and_its_patch_applies(agy_relay: Relay) -> None:
    await isolated_write_then_apply(agy_relay, "[[agy:write:made.txt]] make it", "made.txt", "written by fake agy")


async def test_an_isolated_cold_gemini_cli_run_writes_in_its_worktree_and_its_patch_applies(relay: Relay) -> None:
    await isolated_write_then_apply(relay, "[[fake:write_file]] save it", "written.txt", "written by the fake model")


async def test_an_isolated_warm_gemini_cli_run_writes_in_its_worktree_and_its_patch_applies(relay: Relay) -> None:
    prompt = "[[fake:write_file]] save it"
    await isolated_write_then_apply(relay, prompt, "written.txt", "written by the fake model", warm=True, **WARM)
