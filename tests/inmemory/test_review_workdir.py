"""workingDirectory on gemini-search and gemini-structured (seed 002): the run works in that directory, realpath-
resolved; @ references and `files` are read from it and refused outside it; a directory outside
GEMINI_RELAY_ALLOWED_ROOTS is refused before anything runs."""

from __future__ import annotations

import json

import pytest

from tests.inmemory.conftest import InMemory, text_of
from tests.inmemory.scripted import answer

pytestmark = pytest.mark.anyio

REVIEW = {"GEMINI_RELAY_TOOLSETS": "review"}
SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}


async def test_gemini_search_runs_in_the_working_directory_it_is_given(relay: InMemory) -> None:
    (relay.project / "sub").mkdir()
    relay.backend.queue(answer("See https://example.com/a"))
    async with relay.client(**REVIEW) as client:
        result = await client.call_tool("gemini-search", {"query": "anything", "workingDirectory": "sub"})
    assert not result.is_error, text_of(result)
    assert relay.backend.specs[0].cwd == (relay.project / "sub").resolve()


async def test_gemini_structured_reads_references_and_files_from_its_working_directory_and_no_further(
    relay: InMemory,
) -> None:
    sub = relay.project / "sub"
    sub.mkdir()
    (sub / "notes.txt").write_text("NOTES-IN-SUB\n")
    (sub / "data.txt").write_text("DATA-IN-SUB\n")
    (relay.project / "secret.txt").write_text("PROJECT-SECRET\n")
    relay.backend.queue(answer(json.dumps({"n": 1})))
    args = {"prompt": "count @notes.txt", "schema": SCHEMA, "workingDirectory": "sub"}
    async with relay.client(**REVIEW) as client:
        result = await client.call_tool("gemini-structured", {**args, "files": ["data.txt"]})
        escaped = await client.call_tool("gemini-structured", {**args, "files": ["../secret.txt"]})
    assert not result.is_error, text_of(result)
    (spec,) = relay.backend.specs
    assert spec.cwd == sub.resolve() and "NOTES-IN-SUB" in spec.prompt and "DATA-IN-SUB" in spec.prompt
    assert escaped.is_error and "is outside the working directory" in text_of(escaped)


async def test_a_working_directory_outside_the_allowed_roots_is_refused_before_any_run(relay: InMemory) -> None:
    (relay.project / "sub").mkdir()
    (relay.project / "allowed").mkdir()
    env = {**REVIEW, "GEMINI_RELAY_ALLOWED_ROOTS": str(relay.project / "allowed")}
    async with relay.client(**env) as client:
        search = await client.call_tool("gemini-search", {"query": "q", "workingDirectory": "sub"})
        structured = await client.call_tool(
            "gemini-structured", {"prompt": "p", "schema": SCHEMA, "workingDirectory": "sub"}
        )
    for result in (search, structured):
        assert result.is_error and "outside GEMINI_RELAY_ALLOWED_ROOTS" in text_of(result)
    assert relay.backend.specs == []


async def test_every_review_tool_reply_carries_its_duration_in_meta_and_a_default_tool_does_not(
    relay: InMemory,
) -> None:
    relay.backend.queue(answer("See https://example.com/a"))
    relay.backend.queue(answer(json.dumps({"n": 1})))
    relay.backend.queue(answer("plain"))
    async with relay.client(**REVIEW) as client:
        search = await client.call_tool("gemini-search", {"query": "anything"})
        structured = await client.call_tool("gemini-structured", {"prompt": "p", "schema": SCHEMA})
        ask = await client.call_tool("gemini-ask", {"prompt": "p"})
    for result in (search, structured):
        assert result.meta is not None and isinstance(result.meta["durationMs"], int) and result.meta["durationMs"] >= 0
    assert "durationMs" not in (ask.meta or {})
