"""The fixture tools the conformance scenarios call (`test_simple_text`, `test_input_required_result_*`, `slow_compute`,
…), each answering exactly what its scenario checks. They ask the client through the call's Channel, so the same
fixture exercises a 2025-11-25 request on the stream or a 2026-07-28 `input_required` round."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio
import mcp_types as types

from gemini_relay.tools.common.channel import (
    Channel,
    answer_of,
    elicit_request,
    roots_request,
    sample_request,
    sampled_text,
)

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="  # 1x1 red
WAV = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA="  # a minimal WAV
EMPTY: dict[str, Any] = {"type": "object", "properties": {}}
STEP = 0.05  # the scenarios ask for ~50 ms between notifications, to see several arrive during one call
NAME_FORM = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
CONFIRM_FORM = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
ISSUED = "issued"  # the state a round of the request-state fixtures mints and expects back

Handler = Callable[[dict[str, Any], Channel], Awaitable[types.CallToolResult]]


class FixtureError(Exception):
    """The fixture fails as a tool (an `isError` result with this text)."""


class FixtureProtocolError(Exception):
    """The fixture fails at the protocol level (a JSON-RPC error; a task ends `failed`)."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class Fixture:
    name: str
    description: str
    handler: Handler
    schema: Mapping[str, Any] = field(default_factory=lambda: dict(EMPTY))
    requires: tuple[str, ...] = ()  # client capabilities the call needs (-32021 without them)
    task_support: str | None = None  # "optional" / "required": may (must) run as an MCP task
    # Asked before a task is created (its answers come in input_required rounds): the task then runs with them.
    gather: Callable[[dict[str, Any], Channel], Awaitable[object]] | None = None

    def entry(self) -> types.Tool:
        execution = types.ToolExecution(task_support=self.task_support) if self.task_support else None  # type: ignore[arg-type]
        return types.Tool(name=self.name, description=self.description, input_schema=dict(self.schema), execution=execution)


def text(value: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=value)])


def _image() -> types.ImageContent:
    return types.ImageContent(type="image", data=PNG, mime_type="image/png")


async def _simple_text(args: dict[str, Any], ch: Channel) -> types.CallToolResult:
    return text("This is a simple text response for testing.")


async def _image_content(args: dict[str, Any], ch: Channel) -> types.CallToolResult:
    return types.CallToolResult(content=[_image()])


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
        content=[first, _image(), _embedded("test://mixed-content-resource", "application/json", data)]
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


# --- 2026-07-28 diagnostics and multi-round-trip (`input_required`) fixtures --------------------------------------


async def _logging_tool(args: dict[str, Any], ch: Channel) -> types.CallToolResult:
    await ch.log("info", "test_logging_tool ran")  # sent only if the request opted into a log level
    return text("Logging tool executed")


async def _custom_header(args: dict[str, Any], ch: Channel) -> types.CallToolResult:
    return text(f"Region: {args.get('region')}; query: {args.get('query')}")


async def _missing_capability(args: dict[str, Any], ch: Channel) -> types.CallToolResult:
    return text("Client declared the sampling capability")


async def _streaming_elicitation(args: dict[str, Any], ch: Channel) -> types.CallToolResult:
    await ch.progress(0, 1, "asking the user")
    answer = await ch.ask(CONFIRM_FORM, "Continue?", key="confirm")
    await ch.progress(1, 1, "done")
    return text(f"Confirmed: {bool(answer.content.get('ok'))}")


async def _irr_elicitation(args: dict[str, Any], ch: Channel) -> types.CallToolResult:
    answer = await ch.ask(NAME_FORM, "What is your name?", key="user_name")
    return text(f"Hello, {answer.content.get('name', 'anonymous')}!")


async def _irr_sampling(args: dict[str, Any], ch: Channel) -> types.CallToolResult:
    answer = await ch.sample("What is the capital of France?", key="capital_question")
    return text(f"LLM response: {answer}")


async def _irr_roots(args: dict[str, Any], ch: Channel) -> types.CallToolResult:
    roots = await ch.roots(key="client_roots")
    return text(f"Client roots: {', '.join(roots) or '(none)'}")


async def _irr_request_state(args: dict[str, Any], ch: Channel) -> types.CallToolResult:
    answer = answer_of(ch.response("confirm"))
    if answer is None or ch.state != ISSUED:
        ch.need({"confirm": elicit_request("Please confirm", CONFIRM_FORM)}, state=ISSUED)
    return text(f"state-ok: confirmed={bool(answer.content.get('ok'))}")


async def _irr_multiple(args: dict[str, Any], ch: Channel) -> types.CallToolResult:
    name, greeting, roots = answer_of(ch.response("user_name")), ch.response("greeting"), ch.response("client_roots")
    missing: dict[str, dict[str, Any]] = {}
    if name is None:
        missing["user_name"] = elicit_request("What is your name?", NAME_FORM)
    if greeting is None:
        missing["greeting"] = sample_request("Generate a greeting", 50)
    if roots is None:
        missing["client_roots"] = roots_request()
    if missing or name is None:
        ch.need(missing)
    count = len((roots or {}).get("roots") or [])
    return text(f"{sampled_text(greeting)} {name.content.get('name', '')}; {count} root(s)")


async def _irr_multi_round(args: dict[str, Any], ch: Channel) -> types.CallToolResult:
    first = await ch.ask(NAME_FORM, "Step 1: What is your name?", key="step1")
    color = {"type": "object", "properties": {"color": {"type": "string"}}, "required": ["color"]}
    second = await ch.ask(color, "Step 2: What is your favorite color?", key="step2")
    return text(f"{first.content.get('name')} likes {second.content.get('color')}")


async def _irr_tampered(args: dict[str, Any], ch: Channel) -> types.CallToolResult:
    if answer_of(ch.response("confirm")) is None or ch.state != ISSUED:
        ch.need({"confirm": elicit_request("Please confirm", CONFIRM_FORM)}, state=ISSUED)
    return text("state verified")


async def _irr_capabilities(args: dict[str, Any], ch: Channel) -> types.CallToolResult:
    wanted: dict[str, dict[str, Any]] = {}
    if ch.supports("sampling") and ch.response("sample") is None:
        wanted["sample"] = sample_request("Say hello", 20)
    if ch.supports("elicitation") and answer_of(ch.response("ask")) is None:
        wanted["ask"] = elicit_request("What is your name?", NAME_FORM)
    if wanted:
        ch.need(wanted)
    return text("Collected input for the declared client capabilities")


# --- Tasks-extension fixtures (SEP-2663): run as MCP tasks when the client declares the extension -----------------

INTERNAL_ERROR = -32603


async def _greet(args: dict[str, Any], ch: Channel) -> types.CallToolResult:
    return text(f"Hello, {args.get('name', 'World')}!")


async def _slow_compute(args: dict[str, Any], ch: Channel) -> types.CallToolResult:
    raw = args.get("seconds", 1)
    seconds = max(0.0, float(raw)) if isinstance(raw, int | float) else 1.0
    await anyio.sleep(seconds)  # a cancelled task stops here
    return text(f"Computed {args.get('label', 'job')} in {seconds:g}s")


async def _failing_job(args: dict[str, Any], ch: Channel) -> types.CallToolResult:
    await anyio.sleep(1.0)
    raise FixtureError("failing_job: the job ran and reported an error")


async def _protocol_error_job(args: dict[str, Any], ch: Channel) -> types.CallToolResult:
    await anyio.sleep(0.2)
    raise FixtureProtocolError(INTERNAL_ERROR, "protocol_error_job: simulated internal failure")


async def _confirm_delete(args: dict[str, Any], ch: Channel) -> types.CallToolResult:
    filename = str(args.get("filename", "file"))
    form = {"type": "object", "properties": {"confirm": {"type": "boolean"}}, "required": ["confirm"]}
    answer = await ch.ask(form, f"Delete {filename}?", key="confirm")
    return text(f"Deleted {filename}" if answer.content.get("confirm") else f"Deletion of {filename} cancelled")


async def _multi_input(args: dict[str, Any], ch: Channel) -> types.CallToolResult:
    first, second = answer_of(ch.response("first")), answer_of(ch.response("second"))
    if first is None or second is None:
        missing = {"first": elicit_request("First input?", NAME_FORM), "second": elicit_request("Second input?", NAME_FORM)}
        ch.need({key: value for key, value in missing.items() if ch.response(key) is None})
    return text(f"Got {first.content.get('name')} and {second.content.get('name')}")


async def _ask_name(args: dict[str, Any], ch: Channel) -> object:
    return await ch.ask(NAME_FORM, "What is your name?", key="user_name")


async def _tool_with_task(args: dict[str, Any], ch: Channel) -> types.CallToolResult:
    answer = await ch.ask(NAME_FORM, "What is your name?", key="user_name")
    await anyio.sleep(0.2)
    return text(f"Hello, {answer.content.get('name', 'anonymous')}! (computed in a task)")


FIXTURES: tuple[Fixture, ...] = (
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
    Fixture(
        "test_custom_header",
        "Mirrors its region argument into the Mcp-Param-Region header (SEP-2243)",
        _custom_header,
        {
            "type": "object",
            "properties": {
                "region": {"type": "string", "description": "Region to route to", "x-mcp-header": "Region"},
                "query": {"type": "string", "description": "Free text"},
            },
            "required": ["region"],
        },
    ),
    Fixture("test_logging_tool", "Logs only when the request sets a log level", _logging_tool),
    Fixture("test_missing_capability", "Requires the client's sampling capability", _missing_capability, requires=("sampling",)),
    Fixture(
        "test_streaming_elicitation",
        "Needs a confirmation: an input_required round, never a request on the stream",
        _streaming_elicitation,
        requires=("elicitation",),
    ),
    Fixture("test_input_required_result_elicitation", "MRTR: one elicitation", _irr_elicitation),
    Fixture("test_input_required_result_sampling", "MRTR: one sampling request", _irr_sampling),
    Fixture("test_input_required_result_list_roots", "MRTR: one roots/list request", _irr_roots),
    Fixture("test_input_required_result_request_state", "MRTR: requestState round trip", _irr_request_state),
    Fixture("test_input_required_result_multiple_inputs", "MRTR: elicitation, sampling and roots at once", _irr_multiple),
    Fixture("test_input_required_result_multi_round", "MRTR: two rounds", _irr_multi_round),
    Fixture("test_input_required_result_tampered_state", "MRTR: refuses a tampered requestState", _irr_tampered),
    Fixture("test_input_required_result_capabilities", "MRTR: asks only for declared capabilities", _irr_capabilities),
    Fixture("greet", "Sync only: Hello, {name}!", _greet, {"type": "object", "properties": {"name": {"type": "string"}}}),
    Fixture(
        "slow_compute",
        "Task-supporting: sleeps `seconds`, then answers",
        _slow_compute,
        {"type": "object", "properties": {"seconds": {"type": "number"}, "label": {"type": "string"}}},
        task_support="optional",
    ),
    Fixture("failing_job", "Task-required: reports a tool error after ~1 s", _failing_job, task_support="required"),
    Fixture("protocol_error_job", "Task-supporting: fails at the protocol level", _protocol_error_job, task_support="optional"),
    Fixture(
        "confirm_delete",
        "Task-supporting: asks for a confirmation first",
        _confirm_delete,
        {"type": "object", "properties": {"filename": {"type": "string"}}},
        task_support="optional",
    ),
    Fixture("multi_input", "Task-supporting: asks two questions at once", _multi_input, task_support="optional"),
    Fixture(
        "test_tool_with_task",
        "Asks for user_name (input_required rounds), then runs as a task",
        _tool_with_task,
        task_support="required",
        gather=_ask_name,
    ),
)
