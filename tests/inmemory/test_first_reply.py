"""The first reply names the backend and why it was chosen, and what else would work — failed or not. Through the
real backends (nothing found on the empty PATH, so nothing is started), unless a scripted one stands in."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import pytest
from mcp import Client

from gemini_relay.app import build_deps
from gemini_relay.config import Settings
from gemini_relay.server.relay import RelayServer
from tests.inmemory.conftest import InMemory, text_of
from tests.inmemory.scripted import answer

pytestmark = pytest.mark.anyio

API_ALONE = "api — set GEMINI_API_KEY (a key from https://aistudio.google.com/apikey): no CLI and no Node needed"


@asynccontextmanager
async def real_backends(relay: InMemory, **env: str | None) -> AsyncIterator[Client]:
    values = {**relay.env, **env}
    deps = build_deps(Settings.from_env({k: v for k, v in values.items() if v is not None}))
    async with deps.serving(), anyio.create_task_group() as background:
        deps.background = background
        async with Client(RelayServer(deps).build(), mode="legacy") as client:
            yield client
        background.cancel_scope.cancel()


async def test_with_nothing_configured_the_first_answer_says_why_and_that_an_api_key_alone_would_work(
    relay: InMemory,
) -> None:
    async with real_backends(relay, GEMINI_MCP_BACKEND=None) as client:
        first = await client.call_tool("gemini-ask", {"prompt": "hi"})
        second = await client.call_tool("gemini-ask", {"prompt": "hi"})
    text = text_of(first)
    assert first.is_error and text.startswith("Error executing gemini-ask: The Gemini CLI (gemini) was not found")
    assert "⚠️ Using the gemini backend (Gemini CLI) because GEMINI_MCP_BACKEND is unset, agy was not found" in text
    assert API_ALONE in text and "Choose one with GEMINI_MCP_BACKEND (agy, api)." in text
    # Every call that cannot start says what would work; the why was said once.
    assert API_ALONE in text_of(second) and "Using the" not in text_of(second)


async def test_an_explicitly_chosen_backend_that_cannot_start_names_the_others(relay: InMemory) -> None:
    async with real_backends(relay, GEMINI_MCP_BACKEND="agy") as client:
        result = await client.call_tool("gemini-ask", {"prompt": "hi"})
    text = text_of(result)
    assert result.is_error and "agy (the Antigravity CLI) was not found on PATH" in text
    assert "⚠️ Other backends: gemini — install the Gemini CLI" in text and API_ALONE in text


async def test_a_failure_that_is_not_about_the_backend_names_no_alternatives(relay: InMemory) -> None:
    async with relay.client() as client:
        result = await client.call_tool("gemini-ask", {"prompt": "hi", "model": "--yolo"})
    assert result.is_error and "Other backends" not in text_of(result)


async def test_the_first_answer_of_an_automatic_choice_carries_the_notice_once(relay: InMemory) -> None:
    relay.backend.queue(answer("one"), answer("two"))
    env = {k: v for k, v in relay.env.items() if k != "GEMINI_MCP_BACKEND"}
    relay.env = env
    async with relay.client() as client:
        first = text_of(await client.call_tool("gemini-ask", {"prompt": "hi"}))
        second = text_of(await client.call_tool("gemini-ask", {"prompt": "hi"}))
    assert first.startswith("⚠️ Using the gemini backend (Gemini CLI) because GEMINI_MCP_BACKEND is unset")
    assert API_ALONE in first and "\n\nGemini response:\none" in first
    assert second.startswith("Gemini response:\ntwo")
