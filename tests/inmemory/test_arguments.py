"""`Invalid arguments` shapes in memory: schema violations and the backend-neutral input checks answer
`Invalid arguments for <tool>: <field>: <message>` and never reach the backend."""

from __future__ import annotations

from typing import Any

import pytest

from tests.inmemory.conftest import InMemory, text_of

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(
    ("tool", "arguments", "expected"),
    [
        ("gemini-ask", {}, "Invalid arguments for gemini-ask: prompt: Field required"),
        (
            "gemini-ask",
            {"prompt": "p", "bogus": 1},
            "Invalid arguments for gemini-ask: bogus: unknown argument (accepted: ",
        ),
        ("gemini-ask", {"prompt": "p", "effort": "max"}, "Invalid arguments for gemini-ask: effort: "),
        (
            "gemini-ask",
            {"prompt": "p", "conversationId": "abc 🧵 and more"},
            "Invalid arguments for gemini-ask: conversationId: must be a conversation id",
        ),
        ("gemini-ask", {"prompt": "p", "model": "-m --yolo"}, "Invalid arguments for gemini-ask: model: "),
        ("gemini-ask", {"prompt": "p", "agent": "../x"}, "Invalid arguments for gemini-ask: agent: "),
        ("gemini-ask", {"prompt": "p", "addDirs": ["missing"]}, "Invalid arguments for gemini-ask: addDirs: "),
        (
            "gemini-fetch-chunk",
            {"cacheKey": "deadbeef"},
            "Invalid arguments for gemini-fetch-chunk: chunkIndex: Field required",
        ),
    ],
)
async def test_a_malformed_argument_is_refused_by_field_before_any_run(
    relay: InMemory, tool: str, arguments: dict[str, Any], expected: str
) -> None:
    async with relay.client() as client:
        result = await client.call_tool(tool, arguments)
    assert result.is_error
    assert text_of(result).startswith(f"Error executing {tool}: {expected}"), text_of(result)
    assert relay.backend.specs == []
