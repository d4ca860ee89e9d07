"""The conformance fixtures (GEMINI_MCP_TEST_TOOLS=conformance) over stdio: the server, not the stdio front's shipped
answer, serves their surface. Their tasks (a question parking a task `input_required`, tasks/update answering some or
all of it, a protocol failure ending it `failed`, a task-required tool refusing a client without the extension) are
proved in memory: tests/inmemory/test_tasks.py."""

from __future__ import annotations

import pytest

from tests.conformance.fixtures import SERVE
from tests.harness import Relay
from tests.task_client import LEGACY, task_client

pytestmark = pytest.mark.anyio
FIXTURES = SERVE


async def test_over_stdio_the_fixture_surface_is_the_servers_own_not_the_shipped_front_answer(relay: Relay) -> None:
    async with task_client(relay, LEGACY, env={**FIXTURES, "GEMINI_RELAY_HOST": "off"}) as client:
        listed = await client.result("tools/list", {})
    assert client.initialize is not None and "completions" in client.initialize["capabilities"]
    assert {"test_simple_text", "slow_compute"} <= {tool["name"] for tool in listed["tools"]}
