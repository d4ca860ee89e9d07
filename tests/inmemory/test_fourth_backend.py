"""A fourth backend is its own package plus one registry line: the echo backend (tests/inmemory/echo_backend),
added with `register(ENTRY)` and nothing else, is chosen by GEMINI_MCP_BACKEND or its alias, found by the automatic
choice, runs through the one executor, answers gemini-models and gemini-doctor, and has its settings travel."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager

import anyio
import pytest
from mcp import Client

from gemini_relay.app import build_deps
from gemini_relay.backends.backend_registry import names, register, relevant_env, resolve_name
from gemini_relay.errors import ConfigError
from gemini_relay.server.relay import RelayServer
from tests.inmemory import echo_backend
from tests.inmemory.conftest import InMemory, text_of

pytestmark = pytest.mark.anyio


@pytest.fixture
def echo_registered() -> Iterator[None]:
    unregister = register(echo_backend.ENTRY)  # the one line a new backend takes in backends/backend_registry.py
    try:
        yield
    finally:
        unregister()


@asynccontextmanager
async def serving(relay: InMemory, env: dict[str, str]) -> AsyncIterator[Client]:
    """The real server with the registry's own backends: no override, so the echo backend is built from its entry."""
    deps = build_deps(relay.settings(**env) if env else relay.settings())
    async with deps.serving(), anyio.create_task_group() as background:
        deps.background = background
        async with Client(RelayServer(deps).build(), mode="legacy") as client:
            yield client
        background.cancel_scope.cancel()


@pytest.mark.usefixtures("echo_registered")
async def test_a_registered_backend_answers_an_ask_through_the_one_executor(relay: InMemory) -> None:
    async with serving(relay, {"GEMINI_MCP_BACKEND": "echo", "ECHO_PREFIX": "said: "}) as client:
        result = await client.call_tool("gemini-ask", {"prompt": "hello"})
    assert not result.is_error
    assert text_of(result).startswith("Gemini response:\nsaid: hello\n")


@pytest.mark.usefixtures("echo_registered")
async def test_its_alias_chooses_it_and_its_capabilities_reach_the_tools(relay: InMemory) -> None:
    async with serving(relay, {"GEMINI_MCP_BACKEND": "parrot"}) as client:
        models = text_of(await client.call_tool("gemini-models", {}))
        doctor = text_of(await client.call_tool("gemini-doctor", {}))
    assert "- echo-1" in models
    assert "## Echo" in doctor


@pytest.mark.usefixtures("echo_registered")
async def test_the_automatic_choice_finds_it_and_says_why(relay: InMemory) -> None:
    del relay.env["GEMINI_MCP_BACKEND"]
    async with serving(relay, {"ECHO_BACKEND_ON": "1"}) as client:
        first = text_of(await client.call_tool("gemini-ask", {"prompt": "hi"}))
    assert "Using the echo backend (Echo) because GEMINI_MCP_BACKEND is unset and ECHO_BACKEND_ON is set" in first
    assert "echo: hi" in first


@pytest.mark.usefixtures("echo_registered")
def test_its_name_is_a_registry_key_and_its_variables_travel_to_a_host() -> None:
    assert "echo" in names()
    assert resolve_name("Parrot") == "echo"
    kept = relevant_env({"ECHO_PREFIX": "x", "WINDOWID": "7", "PATH": "/bin"})
    assert kept.get("ECHO_PREFIX") == "x"
    assert "WINDOWID" not in kept


def test_without_its_registry_line_the_relay_does_not_know_it() -> None:
    with pytest.raises(ConfigError, match="GEMINI_MCP_BACKEND='echo' is not one of"):
        resolve_name("echo")
