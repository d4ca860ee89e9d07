"""A size budget for the default tool list: most clients (Cursor, Codex, the Gemini CLI) send every tool's name,
description and inputSchema to their model on every turn, so the default tools' definitions must stay within
2,000 tokens, counted as characters/4 of their JSON — on every backend, whose wording the descriptions take.
The rest of a tools/list entry (annotations, execution, outputSchema) is for the client, not the model; bench/
bench_tools.py prints both sizes for every toolset combination."""

from __future__ import annotations

import json

import pytest

from gemini_relay.backends.backend_registry import entries
from gemini_relay.config import DEFAULT_TIMEOUT_MINUTES
from gemini_relay.server.surface import tool_entry
from gemini_relay.tools.registry import registry
from tests.inmemory.conftest import InMemory

pytestmark = pytest.mark.anyio
BUDGET_TOKENS = 2000


def definitions(tools: list[dict[str, object]]) -> str:
    """What a client hands its model of each tool, as compact JSON."""
    kept = [{key: tool[key] for key in ("name", "description", "inputSchema") if key in tool} for tool in tools]
    return json.dumps({"tools": kept}, ensure_ascii=False, separators=(",", ":"))


@pytest.mark.parametrize("backend", [entry.name for entry in entries()])
def test_the_default_tools_definitions_fit_in_two_thousand_tokens_on_every_backend(backend: str) -> None:
    upstream = next(entry for entry in entries() if entry.name == backend)
    limit = DEFAULT_TIMEOUT_MINUTES * 60
    listed = [tool_entry(tool, upstream, tasks=True, max_timeout=limit) for tool in registry(test_tools=False)]
    text = definitions([t.model_dump(by_alias=True, mode="json", exclude_none=True) for t in listed])
    assert len(listed) == 11
    assert len(text) / 4 <= BUDGET_TOKENS, f"{len(text) // 4} tokens (characters/4)"


async def test_what_a_client_lists_by_default_fits_the_budget(relay: InMemory) -> None:
    async with relay.client() as client:
        tools = [t.model_dump(by_alias=True, mode="json", exclude_none=True) for t in (await client.list_tools()).tools]
    assert len(definitions(tools)) / 4 <= BUDGET_TOKENS
