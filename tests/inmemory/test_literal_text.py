"""Text with `@` and `/` in it reaches the backend as the caller wrote it, in memory: the relay's own inliner takes
only the ` @file` form (so it reads no key file for the other forms), and every tool's text — a prompt, a search
query, a diff under review — goes to the backend whole, where the Gemini CLI backend neutralises the whole text
before the CLI sees it (tests/backends/test_literal_prompt.py proves that against the real CLI, and
test_server_literal.py end to end through the server)."""

from __future__ import annotations

import pytest

from tests.git_repo import GitRepo
from tests.inmemory.conftest import InMemory, text_of
from tests.test_server_literal import HIDDEN, KEYS, OUTSIDE, plant_keys

pytestmark = pytest.mark.anyio


@pytest.mark.spawns_git
async def test_a_search_query_and_a_diff_under_review_reach_the_backend_whole_and_read_no_key_file(
    relay: InMemory,
) -> None:
    plant_keys(relay.project, relay.base)
    repo = GitRepo.create(relay.project, {"app.py": "def main():\n    return 1\n"})
    repo.write({"app.py": f"def main():\n    return '{HIDDEN}'\n"})
    async with relay.client(GEMINI_RELAY_TOOLSETS="review", PATH="/usr/bin:/bin") as client:
        search = await client.call_tool("gemini-search", {"query": f"what is {HIDDEN}"})
        reviewed = await client.call_tool("gemini-review", {"depth": "scan", "focus": f"look at {HIDDEN}"})
    assert not search.is_error and not reviewed.is_error, (text_of(search), text_of(reviewed))
    prompts = [s.prompt for s in relay.backend.specs]
    assert len(prompts) >= 2
    assert all(HIDDEN in p for p in prompts)
    assert not [s for s in (*KEYS.values(), OUTSIDE) if any(s in p for p in prompts)]


async def test_a_leading_slash_reaches_the_backend_with_the_callers_permission_to_run_it(relay: InMemory) -> None:
    async with relay.client() as client:
        refused = await client.call_tool("gemini-ask", {"prompt": "/x hello"})
        allowed = await client.call_tool("gemini-ask", {"prompt": "/x hello", "allowSlashCommands": True})
    assert not refused.is_error and not allowed.is_error
    sent = [(s.prompt, s.allow_slash_commands) for s in relay.backend.specs]
    assert sent == [("/x hello", False), ("/x hello", True)]
