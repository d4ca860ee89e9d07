"""The 2026-07-28 fixture tools: the stateless diagnostics (`test_missing_capability`, `test_logging_tool`,
`test_custom_header`), the multi-round-trip ones (`test_input_required_result_*`) and the Tasks extension's (`greet`,
`slow_compute`, `failing_job`, `protocol_error_job`, `confirm_delete`, `multi_input`, `test_tool_with_task`)."""

from __future__ import annotations

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
from gemini_relay.tools.conformance.fixture import (
    CONFIRM_FORM,
    ISSUED,
    NAME_FORM,
    Fixture,
    FixtureError,
    FixtureProtocolError,
    text,
)

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
        missing = {
            "first": elicit_request("First input?", NAME_FORM),
            "second": elicit_request("Second input?", NAME_FORM),
        }
        ch.need({key: value for key, value in missing.items() if ch.response(key) is None})
    return text(f"Got {first.content.get('name')} and {second.content.get('name')}")


async def _ask_name(args: dict[str, Any], ch: Channel) -> object:
    return await ch.ask(NAME_FORM, "What is your name?", key="user_name")


async def _tool_with_task(args: dict[str, Any], ch: Channel) -> types.CallToolResult:
    answer = await ch.ask(NAME_FORM, "What is your name?", key="user_name")
    await anyio.sleep(0.2)
    return text(f"Hello, {answer.content.get('name', 'anonymous')}! (computed in a task)")


ROUNDS: tuple[Fixture, ...] = (
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
    Fixture(
        "test_missing_capability",
        "Requires the client's sampling capability",
        _missing_capability,
        requires=("sampling",),
    ),
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
    Fixture(
        "test_input_required_result_multiple_inputs", "MRTR: elicitation, sampling and roots at once", _irr_multiple
    ),
    Fixture("test_input_required_result_multi_round", "MRTR: two rounds", _irr_multi_round),
    Fixture("test_input_required_result_tampered_state", "MRTR: refuses a tampered requestState", _irr_tampered),
    Fixture("test_input_required_result_capabilities", "MRTR: asks only for declared capabilities", _irr_capabilities),
    Fixture(
        "greet", "Sync only: Hello, {name}!", _greet, {"type": "object", "properties": {"name": {"type": "string"}}}
    ),
    Fixture(
        "slow_compute",
        "Task-supporting: sleeps `seconds`, then answers",
        _slow_compute,
        {"type": "object", "properties": {"seconds": {"type": "number"}, "label": {"type": "string"}}},
        task_support="optional",
    ),
    Fixture("failing_job", "Task-required: reports a tool error after ~1 s", _failing_job, task_support="required"),
    Fixture(
        "protocol_error_job",
        "Task-supporting: fails at the protocol level",
        _protocol_error_job,
        task_support="optional",
    ),
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
