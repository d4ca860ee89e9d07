"""changeMode in memory: the answer's edit blocks come back parsed in `_meta.edits` and rendered as a summary, a long
edit set is paged into chunks that gemini-ask and gemini-fetch-chunk serve back by cache key and index, an answer
without edit blocks comes back raw, and the guardrail withholds the edits of a run that wrote files itself."""

from __future__ import annotations

import re

import pytest

from gemini_relay.content.changemode import NO_EDITS_PREFIX
from gemini_relay.core.spec import RunSpec
from tests.git_repo import GitRepo
from tests.inmemory.conftest import InMemory, text_of, without_receipt
from tests.inmemory.scripted import answer

pytestmark = pytest.mark.anyio


def edit_block(name: str, line: int, old: str, new: str) -> str:
    return f"**FILE: {name}:{line}**\n```\nOLD:\n{old}\nNEW:\n{new}\n```\n"


async def test_edit_blocks_are_parsed_into_meta_edits(relay: InMemory) -> None:
    relay.backend.queue(answer(edit_block("app.py", 2, "    return 1", "    return 2"), pieces=3))
    async with relay.client() as client:
        result = await client.call_tool("gemini-ask", {"prompt": "bump it", "changeMode": True})
    assert not result.is_error, text_of(result)
    assert "### Edit 1: app.py" in text_of(result)
    assert result.meta is not None
    assert result.meta["edits"] == [
        {"file": "app.py", "startLine": 2, "endLine": 2, "old": "    return 1", "new": "    return 2"}
    ]
    assert "chunked" not in result.meta
    spec = relay.backend.specs[0]
    assert "bump it" in spec.prompt and spec.prompt != "bump it"  # wrapped in the changeMode instructions


async def test_a_long_edit_set_is_chunked_and_every_chunk_is_served_by_its_cache_key(relay: InMemory) -> None:
    body = "\n".join(f"    value_{i} = {'x' * 60}" for i in range(40))
    blocks = "".join(edit_block(f"mod{n}.py", 1, body, body.replace("x", "y")) for n in range(12))
    relay.backend.queue(answer(blocks, pieces=7))
    async with relay.client() as client:
        first = await client.call_tool("gemini-ask", {"prompt": "rename", "changeMode": True})
        assert first.meta is not None and first.meta["chunked"] is True, text_of(first)
        key, total = first.meta["chunkCacheKey"], first.meta["totalChunks"]
        rest = [
            await client.call_tool("gemini-ask", {"prompt": "-", "chunkCacheKey": key, "chunkIndex": index})
            for index in range(2, total + 1)
        ]
    assert total > 1 and len(first.meta["edits"]) == 12
    assert all(not r.is_error for r in rest), [text_of(r) for r in rest]
    texts = [text_of(first), *map(text_of, rest)]
    seen = sorted({int(t.split("### Edit ", 1)[1].split(":", 1)[0]) for t in texts})
    assert seen[0] == 1 and all(f"mod{n}.py" in "".join(texts) for n in range(12))
    assert len(relay.backend.specs) == 1  # paging is no model turn


def numbered_block(i: int, size: int) -> str:
    old = "\n".join(f"old line {i}.{n} " + "x" * 40 for n in range(size))
    new = "\n".join(f"new line {i}.{n} " + "y" * 40 for n in range(size))
    return edit_block(f"src/mod{i}.py", i + 1, old, new)


async def test_edits_render_as_a_summary_and_fetch_chunk_serves_the_same_chunk_as_gemini_ask(
    relay: InMemory,
) -> None:
    relay.backend.queue(answer("Here are the edits.\n\n" + "\n".join(numbered_block(i, 20) for i in range(12))))
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
    assert len(relay.backend.specs) == 1  # paging never reruns the model
    assert "[CHANGEMODE INSTRUCTIONS]" in relay.backend.specs[0].prompt


async def test_an_answer_without_edit_blocks_is_returned_as_its_raw_text(relay: InMemory) -> None:
    relay.backend.queue(answer("I would not change anything."))
    async with relay.client() as client:
        result = await client.call_tool("gemini-ask", {"prompt": "anything?", "changeMode": True})
    assert without_receipt(text_of(result)) == f"{NO_EDITS_PREFIX}\n\nI would not change anything."


GIT = {"PATH": "/usr/bin:/bin"}  # the guardrail reads the working tree with git


@pytest.mark.spawns_git
async def test_the_edits_are_returned_as_data_when_the_run_wrote_nothing(relay: InMemory) -> None:
    GitRepo.create(relay.project, {"app.py": "def main():\n    return 1\n"})
    relay.backend.queue(answer(edit_block("app.py", 2, "    return 1", "    return 2")))
    async with relay.client(**GIT) as client:
        result = await client.call_tool("gemini-ask", {"prompt": "bump it", "changeMode": True})
    assert not result.is_error and "### Edit 1: app.py" in text_of(result)
    assert result.meta is not None
    edit = {"file": "app.py", "startLine": 2, "endLine": 2, "old": "    return 1", "new": "    return 2"}
    assert result.meta["edits"] == [edit]


@pytest.mark.spawns_git
async def test_the_edits_are_withheld_when_the_run_wrote_files(relay: InMemory) -> None:
    GitRepo.create(relay.project, {"app.py": "def main():\n    return 1\n"})

    def write_a_file(spec: RunSpec) -> None:  # the agent writing in the working tree during its run
        (spec.cwd / "written.txt").write_text("hello\n", encoding="utf-8")

    relay.backend.on_run = write_a_file
    relay.backend.queue(answer(edit_block("app.py", 2, "    return 1", "    return 2")))
    async with relay.client(**GIT) as client:
        result = await client.call_tool("gemini-ask", {"prompt": "bump it", "changeMode": True})
    assert not result.is_error, text_of(result)
    text = text_of(result)
    assert text.startswith("⚠️ The agent changed files in the working tree during this run: written.txt.")
    assert "Its edits were withheld" in text and "### Edit" not in text
    assert result.meta == {"appliedWrites": True, "changedFiles": ["written.txt"]}


@pytest.mark.spawns_git
async def test_outside_a_git_repository_meta_says_the_write_guard_was_off_and_why(relay: InMemory) -> None:
    relay.backend.queue(answer(edit_block("app.py", 2, "    return 1", "    return 2")))
    async with relay.client(PATH="/usr/bin:/bin") as client:
        result = await client.call_tool("gemini-ask", {"prompt": "bump it", "changeMode": True})
    assert not result.is_error, text_of(result)
    assert text_of(result).startswith("ChangeMode Summary") or "### Edit 1: app.py" in text_of(result)
    assert result.meta is not None and result.meta["edits"]
    assert (
        str(result.meta["writeGuard"]).startswith("off: ") and "is not a git working tree" in result.meta["writeGuard"]
    )


@pytest.mark.spawns_git
async def test_inside_a_git_repository_a_clean_run_has_no_write_guard_warning(relay: InMemory) -> None:
    GitRepo.create(relay.project, {"app.py": "def main():\n    return 1\n"})
    relay.backend.queue(answer(edit_block("app.py", 2, "    return 1", "    return 2")))
    async with relay.client(PATH="/usr/bin:/bin") as client:
        result = await client.call_tool("gemini-ask", {"prompt": "bump it", "changeMode": True})
    assert not result.is_error and result.meta is not None and result.meta["edits"]
    assert "writeGuard" not in result.meta
