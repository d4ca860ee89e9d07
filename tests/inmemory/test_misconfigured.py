"""Start, then explain: a server whose environment is wrong still comes up. Its instructions, gemini-doctor and the
answer to every other call say what is wrong and how to fix it, and nothing runs — so a client shows the reason
instead of "connection closed"."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import pytest
from mcp import Client

from gemini_relay.app import explained_deps
from gemini_relay.core.vocabulary import BackendName
from gemini_relay.server.relay import RelayServer
from tests.inmemory.conftest import InMemory, text_of

pytestmark = pytest.mark.anyio


@asynccontextmanager
async def started(
    relay: InMemory, overrides: dict[str, str] | None = None, *, scripted: bool = True
) -> AsyncIterator[Client]:
    """A client of the server as the `gemini-relay` command starts it: explained_deps, whatever the env says.
    `scripted`: the scripted backend stands in for the Gemini CLI (else the real backends, which find nothing on
    the empty PATH: gemini-doctor checks them without starting a process)."""
    backends = {BackendName("gemini"): relay.backend} if scripted else None
    deps = explained_deps({**relay.env, **(overrides or {})}, backends=backends)
    async with deps.serving(), anyio.create_task_group() as background:
        deps.background = background
        async with Client(RelayServer(deps).build(), mode="legacy") as client:
            yield client
        background.cancel_scope.cancel()


MISCONFIGURED = [
    ("GEMINI_MCP_BACKEND", "gemni", "GEMINI_MCP_BACKEND='gemni' is not one of: agy, antigravity, gemini"),
    ("AGY_CLI_PATH", "/nowhere/agy", "AGY_CLI_PATH='/nowhere/agy' is missing or not executable"),
    ("GEMINI_RELAY_TOOLSETS", "jobs,reviw", "GEMINI_RELAY_TOOLSETS names unknown toolset(s) reviw; known:"),
    ("GEMINI_MCP_TIMEOUT", "soon", "GEMINI_MCP_TIMEOUT='soon' is not a number"),
    ("AGY_MCP_USAGE_LOW", "lots", "AGY_MCP_USAGE_LOW='lots' must be a percent from 0 to 100"),
    ("GEMINI_RELAY_USAGE_INTERVAL", "30s", "GEMINI_RELAY_USAGE_INTERVAL='30s' must be 0 (off) or at least 60 s"),
]


@pytest.mark.parametrize(("variable", "value", "said"), MISCONFIGURED, ids=[m[0] for m in MISCONFIGURED])
async def test_a_misconfigured_server_comes_up_says_why_and_refuses_runs(
    relay: InMemory, variable: str, value: str, said: str
) -> None:
    async with started(relay, {variable: value}) as client:
        instructions = client.instructions or ""
        tools = [tool.name for tool in (await client.list_tools()).tools]
        ask = await client.call_tool("gemini-ask", {"prompt": "hi"})
    async with started(relay, {variable: value}, scripted=False) as client:
        doctor = await client.call_tool("gemini-doctor", {})
    assert instructions.startswith("⚠️ gemini-relay is misconfigured, so it runs nothing until this is fixed:\n")
    assert said in instructions
    assert "gemini-ask" in tools and "gemini-doctor" in tools
    assert ask.is_error
    assert text_of(ask).startswith("Error executing gemini-ask: gemini-relay is misconfigured")
    assert said in text_of(ask) and "then restart the server" in text_of(ask)
    assert relay.backend.specs == []  # nothing ran
    assert not doctor.is_error
    assert "## Configuration" in text_of(doctor) and said in text_of(doctor)
    assert "Verdict: ❌ Action needed" in text_of(doctor)
    assert doctor.structured_content is not None and doctor.structured_content["ready"] is False
    assert any(said in p for p in doctor.structured_content["problems"])


async def test_every_problem_is_said_not_only_the_first(relay: InMemory) -> None:
    async with started(relay, {"GEMINI_MCP_BACKEND": "gemni", "GEMINI_RELAY_TOOLSETS": "reviw"}) as client:
        text = text_of(await client.call_tool("gemini-ping", {}))
    assert "GEMINI_MCP_BACKEND='gemni'" in text and "GEMINI_RELAY_TOOLSETS names unknown toolset(s) reviw" in text


async def test_an_unusable_state_dir_is_explained_and_refuses_runs(relay: InMemory) -> None:
    blocked = relay.base / "a-file"
    blocked.write_text("not a folder", encoding="utf-8")
    async with started(relay, {"GEMINI_RELAY_STATE_DIR": str(blocked / "state")}) as client:
        ask = await client.call_tool("gemini-ask", {"prompt": "hi"})
    assert ask.is_error and f"cannot use the state dir {blocked / 'state'}" in text_of(ask)
    assert "GEMINI_RELAY_STATE_DIR" in text_of(ask)
    assert relay.backend.specs == []


async def test_a_well_configured_server_says_nothing_of_the_kind(relay: InMemory) -> None:
    async with started(relay) as client:
        instructions = client.instructions or ""
        ask = await client.call_tool("gemini-ask", {"prompt": "hi"})
    assert "misconfigured" not in instructions
    assert not ask.is_error and [s.prompt for s in relay.backend.specs] == ["hi"]


async def test_a_bad_backend_name_is_what_the_first_line_says_not_that_none_was_chosen(relay: InMemory) -> None:
    async with started(relay, {"GEMINI_MCP_BACKEND": "bogus"}, scripted=False) as client:
        doctor = text_of(await client.call_tool("gemini-doctor", {}))
    first = doctor.splitlines()[0]
    assert "GEMINI_MCP_BACKEND='bogus' names no backend" in first, first
    assert "GEMINI_MCP_BACKEND is unset" not in doctor
    assert "Active backend: gemini (automatic: GEMINI_MCP_BACKEND='bogus' names no backend)" in doctor
