"""Structured content: every data tool declares an outputSchema, its structuredContent validates against that schema
(and against the SDK client's own check), the text block stays; a file a run writes comes back as a resource_link."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from jsonschema import Draft202012Validator  # type: ignore[import-untyped]

from gemini_relay.core.vocabulary import Toolset
from gemini_relay.tools.common.output_schemas import ANSWER_SCHEMA, MEDIA
from gemini_relay.tools.registry import registry
from tests.git_repo import GitRepo
from tests.harness import Relay

pytestmark = pytest.mark.anyio

DATA_TOOLS = {
    "gemini-models",
    "gemini-doctor",
    "gemini-conversations",
    "gemini-assess",
    "gemini-structured",
    "gemini-consensus",
    "gemini-run",
    "gemini-status",
    "gemini-wait",
    "gemini-jobs",
    "gemini-usage",
}
ALL = {"GEMINI_RELAY_TOOLSETS": "jobs,review"}


def valid(schema: dict[str, Any], data: Any) -> None:
    errors = [e.message for e in Draft202012Validator(schema).iter_errors(data)]
    assert not errors, (errors, data)


def test_each_data_tool_declares_a_valid_output_schema_and_no_other_tool_does() -> None:
    tools = registry(test_tools=False, toolsets=frozenset(Toolset))
    declared = {t.name for t in tools if t.output_schema is not None}
    assert declared == DATA_TOOLS
    for tool in tools:
        if tool.output_schema is not None:
            Draft202012Validator.check_schema(tool.output_schema)
            assert tool.output_schema["type"] == "object"  # structuredContent is always an object
    Draft202012Validator.check_schema(ANSWER_SCHEMA)
    Draft202012Validator.check_schema(MEDIA)


async def test_every_data_tool_answers_structured_content_valid_against_its_own_schema(relay: Relay) -> None:
    GitRepo.create(relay.project, {"a.py": "x = 1\n"})
    (relay.project / "a.py").write_text("x = 2\n", encoding="utf-8")
    calls: dict[str, dict[str, Any]] = {
        "gemini-models": {},
        "gemini-doctor": {},
        "gemini-conversations": {},
        "gemini-assess": {},
        "gemini-structured": {"prompt": '[[fake:json:{"n": 3}]] give n', "schema": {"type": "object"}},
        "gemini-consensus": {"prompt": "a decision"},  # the default panel: the CLI's pro and flash
    }
    results: dict[str, types.CallToolResult] = {}
    async with relay.client(**ALL) as client:
        schemas = {t.name: t.output_schema for t in (await client.list_tools()).tools}
        for name, args in calls.items():
            results[name] = await client.call_tool(name, args)  # the SDK client validates against the schema too
        started = await client.call_tool("gemini-run", {"prompt": "structured job"})
        job = {"jobId": (started.structured_content or {})["job_id"]}
        results["gemini-run"] = started
        results["gemini-wait"] = await client.call_tool("gemini-wait", job)
        results["gemini-status"] = await client.call_tool("gemini-status", job)
        results["gemini-jobs"] = await client.call_tool("gemini-jobs", {})
        ask = await client.call_tool(
            "gemini-ask", {"prompt": '[[fake:json:{"a": 1}]] x', "jsonSchema": {"type": "object"}}
        )
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
    assert (usage.structured_content or {})["usage"]["input_tokens"] == 12


async def test_a_plain_answer_carries_no_structured_content(relay: Relay) -> None:
    async with relay.client() as client:
        result = await client.call_tool("gemini-ask", {"prompt": "just text"})
    assert result.structured_content is None
    assert [block.type for block in result.content] == ["text"]


async def test_a_generated_image_comes_back_as_a_resource_link_to_its_file(agy_relay: Relay) -> None:
    async with agy_relay.client() as client:
        result = await client.call_tool("gemini-image", {"prompt": "[[agy:image]] a red square"})
    assert not result.is_error, result.content
    text, link = result.content
    assert text.type == "text" and link.type == "resource_link"
    path = Path(str(link.uri).removeprefix("file://"))
    assert path.is_file() and str(path) in text.text
    assert link.name == path.name and link.mime_type == "image/png" and link.size == path.stat().st_size
