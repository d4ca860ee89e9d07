"""gemini-conversations' dir filter (seed 001's list_sessions(dir)): only the conversations whose working directory
is that one, the filter made absolute from the project root with symlinks resolved."""

from __future__ import annotations

import pytest

from tests.inmemory.conftest import InMemory, text_of

pytestmark = pytest.mark.anyio


async def test_dir_lists_only_the_conversations_that_ran_in_that_directory(relay: InMemory) -> None:
    relay.backend.listed_cwd = None  # each conversation is listed with its run's real cwd
    (relay.project / "sub").mkdir()
    (relay.project / "link").symlink_to(relay.project / "sub")
    async with relay.client(GEMINI_RELAY_TOOLSETS="jobs") as client:
        await client.call_tool("gemini-ask", {"prompt": "in the root"})
        started = await client.call_tool("gemini-run", {"prompt": "in sub", "cwd": "sub"})
        await client.call_tool("gemini-wait", {"jobId": (started.structured_content or {})["job_id"]})
        everything = await client.call_tool("gemini-conversations", {})
        in_sub = await client.call_tool("gemini-conversations", {"dir": "link"})
        nowhere = await client.call_tool("gemini-conversations", {"dir": "gone"})
    assert len((everything.structured_content or {})["conversations"]) == 2
    rows = (in_sub.structured_content or {})["conversations"]
    assert [r["cwd"] for r in rows] == [str((relay.project / "sub").resolve())], text_of(in_sub)
    assert (nowhere.structured_content or {})["conversations"] == []


@pytest.mark.parametrize("raw", ["~no-such-user-here/x", "a\ud92e\udc42b"], ids=["unknown ~user", "lone surrogate"])
async def test_a_dir_no_path_can_name_is_refused_naming_the_field_not_an_internal_error(
    relay: InMemory, raw: str
) -> None:
    async with relay.client() as client:
        answer = await client.call_tool("gemini-conversations", {"dir": raw})
    assert answer.is_error
    assert "Invalid arguments for gemini-conversations: dir:" in text_of(answer), text_of(answer)
