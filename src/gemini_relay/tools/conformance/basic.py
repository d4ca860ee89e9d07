"""The fixture tools of the scenarios every revision shares (`test_simple_text`, `test_image_content`, logging,
progress, sampling, elicitation, JSON Schema 2020-12), each answering exactly what its scenario checks. They ask the
client through the call's Channel, so the same fixture exercises a 2025-11-25 request on the stream or a 2026-07-28
`input_required` round."""

from __future__ import annotations

import json
from typing import Any

import anyio
import mcp_types as types

from gemini_relay.tools.common.channel import Channel
from gemini_relay.tools.conformance.fixture import STEP, WAV, Fixture, FixtureError, image, text


async def _simple_text(args: dict[str, Any], ch: Channel) -> types.CallToolResult:
    return text("This is a simple text response for testing.")


async def _image_content(args: dict[str, Any], ch: Channel) -> types.CallToolResult:
    return types.CallToolResult(content=[image()])


async def _audio_content(args: dict[str, Any], ch: Channel) -> types.CallToolResult:
    return types.CallToolResult(content=[types.AudioContent(type="audio", data=WAV, mime_type="audio/wav")])


def _embedded(uri: str, mime: str, body: str) -> types.EmbeddedResource:
    resource = types.TextResourceContents(uri=uri, mime_type=mime, text=body)
    return types.EmbeddedResource(type="resource", resource=resource)


async def _embedded_resource(args: dict[str, Any], ch: Channel) -> types.CallToolResult:
    body = "This is an embedded resource content."
    return types.CallToolResult(content=[_embedded("test://embedded-resource", "text/plain", body)])


async def _mixed(args: dict[str, Any], ch: Channel) -> types.CallToolResult:
    data = json.dumps({"test": "data", "value": 123})
    first = types.TextContent(type="text", text="Multiple content types test:")
    return types.CallToolResult(
        content=[first, image(), _embedded("test://mixed-content-resource", "application/json", data)]
    )


async def _error(args: dict[str, Any], ch: Channel) -> types.CallToolResult:
    raise FixtureError("This tool intentionally returns an error for testing")


async def _with_logging(args: dict[str, Any], ch: Channel) -> types.CallToolResult:
    for line in ("Tool execution started", "Tool processing data", "Tool execution completed"):
        await ch.log("info", line)
        await anyio.sleep(STEP)
    return text("Tool with logging executed successfully")


async def _with_progress(args: dict[str, Any], ch: Channel) -> types.CallToolResult:
    for step in (0, 50, 100):
        await ch.progress(step, 100, f"Completed step {step} of 100")
        if step < 100:
            await anyio.sleep(STEP)
    return text("Tool with progress executed successfully")


async def _sampling(args: dict[str, Any], ch: Channel) -> types.CallToolResult:
    answer = await ch.sample(str(args.get("prompt", "")), max_tokens=100)
    return text(f"LLM response: {answer}")


def _answered(action: str, content: dict[str, Any], head: str) -> types.CallToolResult:
    return text(f"{head}: action={action}, content={json.dumps(content)}")


async def _elicitation(args: dict[str, Any], ch: Channel) -> types.CallToolResult:
    form = {
        "type": "object",
        "properties": {"response": {"type": "string", "description": "User's response"}},
        "required": ["response"],
    }
    answer = await ch.ask(form, str(args.get("message", "")))
    return _answered(answer.action, answer.content, "User response")


DEFAULTS_FORM: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "User name", "default": "John Doe"},
        "age": {"type": "integer", "description": "User age", "default": 30},
        "score": {"type": "number", "description": "User score", "default": 95.5},
        "status": {
            "type": "string",
            "description": "User status",
            "enum": ["active", "inactive", "pending"],
            "default": "active",
        },
        "verified": {"type": "boolean", "description": "Verification status", "default": True},
    },
    "required": [],
}


def _titled(values: list[str], label: str) -> list[dict[str, str]]:
    names = ("First", "Second", "Third")
    return [{"const": v, "title": f"{n} {label}"} for v, n in zip(values, names, strict=True)]


ENUMS_FORM: dict[str, Any] = {
    "type": "object",
    "properties": {
        "untitledSingle": {
            "type": "string",
            "description": "Select one option",
            "enum": ["option1", "option2", "option3"],
        },
        "titledSingle": {
            "type": "string",
            "description": "Select one option with titles",
            "oneOf": _titled(["value1", "value2", "value3"], "Option"),
        },
        "legacyEnum": {
            "type": "string",
            "description": "Select one option (legacy)",
            "enum": ["opt1", "opt2", "opt3"],
            "enumNames": ["Option One", "Option Two", "Option Three"],
        },
        "untitledMulti": {
            "type": "array",
            "description": "Select multiple options",
            "minItems": 1,
            "maxItems": 3,
            "items": {"type": "string", "enum": ["option1", "option2", "option3"]},
        },
        "titledMulti": {
            "type": "array",
            "description": "Select multiple options with titles",
            "minItems": 1,
            "maxItems": 3,
            "items": {"anyOf": _titled(["value1", "value2", "value3"], "Choice")},
        },
    },
    "required": [],
}


async def _elicitation_defaults(args: dict[str, Any], ch: Channel) -> types.CallToolResult:
    answer = await ch.ask(DEFAULTS_FORM, "Please review and update the form fields with defaults")
    return _answered(answer.action, answer.content, "Elicitation completed")


async def _elicitation_enums(args: dict[str, Any], ch: Channel) -> types.CallToolResult:
    answer = await ch.ask(ENUMS_FORM, "Please select options from the enum fields")
    return _answered(answer.action, answer.content, "Elicitation completed")


async def _json_schema(args: dict[str, Any], ch: Channel) -> types.CallToolResult:
    return text(f"JSON Schema 2020-12 tool called with: {json.dumps(args)}")


BASIC: tuple[Fixture, ...] = (
    Fixture("test_simple_text", "Returns simple text content", _simple_text),
    Fixture("test_image_content", "Returns image content", _image_content),
    Fixture("test_audio_content", "Returns audio content", _audio_content),
    Fixture("test_embedded_resource", "Returns an embedded resource", _embedded_resource),
    Fixture("test_multiple_content_types", "Returns text, image and resource content", _mixed),
    Fixture("test_error_handling", "Always fails", _error),
    Fixture("test_tool_with_logging", "Sends log notifications while running", _with_logging),
    Fixture("test_tool_with_progress", "Sends progress notifications while running", _with_progress),
    Fixture(
        "test_sampling",
        "Requests LLM sampling from the client",
        _sampling,
        {"type": "object", "properties": {"prompt": {"type": "string"}}, "required": ["prompt"]},
    ),
    Fixture(
        "test_elicitation",
        "Requests user input from the client",
        _elicitation,
        {"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]},
    ),
    Fixture("test_elicitation_sep1034_defaults", "Elicitation with defaults (SEP-1034)", _elicitation_defaults),
    Fixture("test_elicitation_sep1330_enums", "Elicitation with enum variants (SEP-1330)", _elicitation_enums),
    Fixture(
        "json_schema_2020_12_tool",
        "Tool with JSON Schema 2020-12 features (SEP-1613)",
        _json_schema,
        {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "$defs": {
                "address": {
                    "$anchor": "addressDef",
                    "type": "object",
                    "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
                }
            },
            "properties": {
                "name": {"type": "string"},
                "address": {"$ref": "#/$defs/address"},
                "contactMethod": {"type": "string", "enum": ["phone", "email"]},
                "phone": {"type": "string"},
                "email": {"type": "string"},
            },
            "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
            "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
            "then": {"required": ["phone"]},
            "else": {"required": ["email"]},
            "additionalProperties": False,
        },
    ),
)
