"""A tool asks the MCP client through its call's Channel (server/sdk_channel.py), exercised by the conformance
fixtures: in a 2025-11-25 session the question is a request on the stream and the answer comes back into the call;
in 2026-07-28 the call ends `input_required`, the client answers and retries, and answers of earlier rounds ride in
the sealed requestState; a capability the client did not declare is refused with -32021."""

from __future__ import annotations

from typing import Any

import mcp_types as types
import pytest
from mcp.client.session import ClientRequestContext
from mcp.shared.exceptions import MCPError

from tests.conformance.fixtures import SERVE
from tests.inmemory.conftest import InMemory, text_of

pytestmark = pytest.mark.anyio
FIXTURES = SERVE
MODERN = "2026-07-28"


def answering(*contents: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """Client options whose elicitation callback accepts with each content in turn; the messages it was shown."""
    shown: list[str] = []

    async def elicit(ctx: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        shown.append(params.message)
        return types.ElicitResult(action="accept", content=contents[len(shown) - 1])

    return {"elicitation_callback": elicit}, shown


async def test_a_legacy_session_gets_the_question_on_its_stream_and_the_call_gets_the_answer(relay: InMemory) -> None:
    options, shown = answering({"response": "yes please"})
    async with relay.session(options=options, overrides=FIXTURES) as client:
        result = await client.call_tool("test_elicitation", {"message": "Proceed?"})
    assert shown == ["Proceed?"]
    assert text_of(result) == 'User response: action=accept, content={"response": "yes please"}'


async def test_a_legacy_session_samples_for_the_tool(relay: InMemory) -> None:
    async def sample(ctx: ClientRequestContext, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        assert params.max_tokens == 100
        reply = types.TextContent(type="text", text="Paris")
        return types.CreateMessageResult(role="assistant", content=reply, model="m", stop_reason="endTurn")

    async with relay.session(options={"sampling_callback": sample}, overrides=FIXTURES) as client:
        result = await client.call_tool("test_sampling", {"prompt": "capital?"})
    assert text_of(result) == "LLM response: Paris"


@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")  # logging/setLevel (SEP-2577)
async def test_a_tools_log_lines_reach_the_client_during_the_call(relay: InMemory) -> None:
    seen: list[str] = []

    async def log(params: types.LoggingMessageNotificationParams) -> None:
        seen.append(str(params.data))

    async with relay.session(options={"logging_callback": log}, overrides=FIXTURES) as client:
        await client.set_logging_level("debug")
        await client.call_tool("test_tool_with_logging", {})
    assert seen == ["Tool execution started", "Tool processing data", "Tool execution completed"]


async def test_a_modern_call_asks_in_rounds_and_keeps_the_earlier_answers_in_its_state(relay: InMemory) -> None:
    options, shown = answering({"name": "Ada"}, {"color": "teal"})
    async with relay.session(MODERN, options, FIXTURES) as client:
        result = await client.call_tool("test_input_required_result_multi_round", {})
    assert shown == ["Step 1: What is your name?", "Step 2: What is your favorite color?"]
    assert text_of(result) == "Ada likes teal"  # round 3 saw step1's answer only through the requestState


async def test_a_modern_call_needing_elicitation_from_a_client_without_it_is_refused(relay: InMemory) -> None:
    async with relay.session(MODERN, overrides=FIXTURES) as client:
        with pytest.raises(MCPError) as refused:
            await client.call_tool("test_streaming_elicitation", {})
    assert refused.value.error.code == -32021
    assert refused.value.error.data == {"requiredCapabilities": {"elicitation": {}}}


async def test_a_legacy_session_without_elicitation_gets_a_tool_error_naming_it(relay: InMemory) -> None:
    async with relay.client(**FIXTURES) as client:
        result = await client.call_tool("test_elicitation", {"message": "Proceed?"})
    assert result.is_error and "elicitation" in text_of(result)
