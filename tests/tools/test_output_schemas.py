"""Structured content: every data tool and every tool that runs a model declares an outputSchema (with the shared
receipt) and no other tool does; a file a run writes (agy's
image) comes back as a resource_link. That each answer validates against its schema, and a plain answer carries no
structured content: tests/inmemory/test_structured_content.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator  # type: ignore[import-untyped]

from gemini_relay.core.vocabulary import Toolset
from gemini_relay.tools.common.output_schemas import ANSWER_SCHEMA, MEDIA, RECEIPT
from gemini_relay.tools.registry import registry
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
    "gemini-quota",
    "gemini-usage",
}
# The tools that run a model: each declares a schema too, for the receipt every answer carries (docs/tools.md).
RUNS_A_MODEL = {"gemini-ask", "gemini-plan", "gemini-brainstorm", "gemini-image", "gemini-review", "gemini-search"}
# The tools whose answer comes from runs, and so declares their receipt.
WITH_RECEIPT = RUNS_A_MODEL | {"gemini-structured", "gemini-consensus", "gemini-run", "gemini-status", "gemini-wait"}
ALL = {"GEMINI_RELAY_TOOLSETS": "jobs,review"}


def valid(schema: dict[str, Any], data: Any) -> None:
    errors = [e.message for e in Draft202012Validator(schema).iter_errors(data)]
    assert not errors, (errors, data)


def test_data_tools_and_tools_running_a_model_declare_a_schema_with_the_receipt_and_no_other_tool_does() -> None:
    tools = registry(test_tools=False, toolsets=frozenset(Toolset))
    declared = {t.name for t in tools if t.output_schema is not None}
    assert declared == DATA_TOOLS | RUNS_A_MODEL
    for tool in tools:
        if tool.output_schema is not None:
            Draft202012Validator.check_schema(tool.output_schema)
            assert tool.output_schema["type"] == "object"  # structuredContent is always an object
            if tool.name in WITH_RECEIPT:
                assert tool.output_schema["properties"]["receipt"] == {"$ref": "#/$defs/receipt"}, tool.name
                assert tool.output_schema["$defs"]["receipt"] is RECEIPT  # one declaration, shared
            else:  # answered without a run: no receipt to declare
                assert "receipt" not in tool.output_schema["properties"], tool.name
                assert "receipt" not in tool.output_schema.get("$defs", {}), tool.name
    Draft202012Validator.check_schema(ANSWER_SCHEMA)
    Draft202012Validator.check_schema(MEDIA)


async def test_a_generated_image_comes_back_as_a_resource_link_to_its_file(agy_relay: Relay) -> None:
    async with agy_relay.client() as client:
        result = await client.call_tool("gemini-image", {"prompt": "[[agy:image]] a red square"})
    assert not result.is_error, result.content
    text, link = result.content
    assert text.type == "text" and link.type == "resource_link"
    path = Path(str(link.uri).removeprefix("file://"))
    assert path.is_file() and str(path) in text.text
    assert link.name == path.name and link.mime_type == "image/png" and link.size == path.stat().st_size


def test_the_job_schemas_declare_agy_mcps_names_beside_the_relays() -> None:
    tools = {t.name: t for t in registry(test_tools=False, toolsets=frozenset({Toolset.JOBS}))}
    for name in ("gemini-status", "gemini-wait", "gemini-run"):
        schema = tools[name].output_schema
        assert schema is not None
        properties = schema["properties"]
        assert {"turns", "num_turns"} <= properties.keys(), name
        assert {"cached_tokens", "cache_read_tokens"} <= properties["usage"]["properties"].keys(), name
