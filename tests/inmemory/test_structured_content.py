"""Structured content in memory: every data tool's structuredContent validates against its own outputSchema (and
against the SDK client's own check) and its text block stays; an answer with a jsonSchema and a plain plan carry the
answer schema; a plain answer carries none. Which tools declare a schema: tests/tools/test_output_schemas.py."""

from __future__ import annotations

from typing import Any

import mcp_types as types
import pytest

from gemini_relay.tools.common.output_schemas import ANSWER_SCHEMA
from tests.fakes.fake_gemini_api import FakeGeminiApi
from tests.git_repo import GitRepo
from tests.inmemory.conftest import InMemory, on_the_api, text_of
from tests.inmemory.scripted import USAGE, answer
from tests.tools.test_output_schemas import ALL, DATA_TOOLS, valid

pytestmark = pytest.mark.anyio


@pytest.mark.spawns_git
async def test_every_data_tool_answers_structured_content_valid_against_its_own_schema(relay: InMemory) -> None:
    GitRepo.create(relay.project, {"a.py": "x = 1\n"})
    (relay.project / "a.py").write_text("x = 2\n", encoding="utf-8")
    calls: dict[str, dict[str, Any]] = {
        "gemini-models": {},
        "gemini-doctor": {},
        "gemini-conversations": {},
        "gemini-assess": {},
        "gemini-structured": {"prompt": "give n", "schema": {"type": "object"}},
        "gemini-consensus": {"prompt": "a decision"},  # the default panel: the CLI's pro and flash
    }
    answers = {"gemini-structured": answer('{"n": 3}')}
    results: dict[str, types.CallToolResult] = {}
    async with relay.client(**ALL, PATH="/usr/bin:/bin") as client:  # gemini-assess runs git
        schemas = {t.name: t.output_schema for t in (await client.list_tools()).tools}
        for name, args in calls.items():
            if name in answers:
                relay.backend.queue(answers[name])
            results[name] = await client.call_tool(name, args)  # the SDK client validates against the schema too
        started = await client.call_tool("gemini-run", {"prompt": "structured job"})
        job = {"jobId": (started.structured_content or {})["job_id"]}
        results["gemini-run"] = started
        results["gemini-wait"] = await client.call_tool("gemini-wait", job)
        results["gemini-status"] = await client.call_tool("gemini-status", job)
        results["gemini-jobs"] = await client.call_tool("gemini-jobs", {})
        results["gemini-quota"] = await client.call_tool("gemini-quota", {})  # on this backend: no groups, a note
        relay.backend.queue(answer('{"a": 1}'))
        ask = await client.call_tool("gemini-ask", {"prompt": "x", "jsonSchema": {"type": "object"}})
        usage = await client.call_tool("gemini-plan", {"task": "a plan"})
    assert set(results) == DATA_TOOLS - {"gemini-usage"}  # the media toolset's: tests/inmemory/test_model_view.py
    for name, result in results.items():
        assert not result.is_error, (name, result.content)
        schema = schemas[name]
        assert schema is not None, name
        valid(schema, result.structured_content)
        assert result.content[0].type == "text" and result.content[0].text  # the text block stays
    assert (results["gemini-structured"].structured_content or {})["value"] == {"n": 3}
    assert (results["gemini-wait"].structured_content or {})["state"] == "done"
    status = results["gemini-status"]
    assert (status.structured_content or {})["result"] in status.content[0].text  # type: ignore[union-attr]
    assert (results["gemini-assess"].structured_content or {})["changedFiles"] == ["a.py"]
    panel = results["gemini-consensus"].structured_content or {}
    assert [a["label"] for a in panel["answers"]] == ["pro", "flash"] and panel["synthesis"]["ok"]
    for result in (ask, usage):
        assert not result.is_error
        valid(ANSWER_SCHEMA, result.structured_content)
    assert (ask.structured_content or {})["value"] == {"a": 1}
    assert (usage.structured_content or {})["usage"]["input_tokens"] == USAGE.input_tokens


async def test_a_plain_answer_carries_its_text_and_its_receipt_as_structured_content(relay: InMemory) -> None:
    async with relay.client() as client:
        result = await client.call_tool("gemini-ask", {"prompt": "just text"})
    data = result.structured_content or {}
    assert [block.type for block in result.content] == ["text"]
    assert data["text"] == text_of(result)  # the model that reads only the data reads the reply, receipt line too
    assert set(data) == {"text", "receipt"} and data["receipt"]["backend"] == "gemini"


async def test_gemini_models_lists_ids_for_model_and_pairs_each_with_its_label(
    relay: InMemory, emulator: FakeGeminiApi
) -> None:
    async with relay.client(**on_the_api(emulator)) as client:
        schema = {t.name: t.output_schema for t in (await client.list_tools()).tools}["gemini-models"]
        result = await client.call_tool("gemini-models", {})
    data = result.structured_content or {}
    assert schema is not None
    valid(schema, data)
    assert data["models"] and all(isinstance(m, str) and "—" not in m for m in data["models"])
    assert [d["id"] for d in data["model_details"]] == data["models"]  # in the same order, as seed 001 has it
    assert all(d["id"] in text_of(result) for d in data["model_details"])  # the text is unchanged and names them
