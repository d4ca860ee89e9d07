"""gemini-doctor says where each effective setting came from (agy-mcp's doctor does): the variable that set it, a
seed's alias of the relay's name, or the default; a secret's name, never its value."""

from __future__ import annotations

from typing import Any

import pytest

from tests.inmemory.conftest import InMemory, text_of

pytestmark = pytest.mark.anyio


async def doctor(relay: InMemory, **env: str) -> tuple[str, dict[str, Any]]:
    async with relay.client(**env) as client:
        result = await client.call_tool("gemini-doctor", {})
    assert result.structured_content is not None
    return text_of(result), result.structured_content


async def test_doctor_names_the_variable_the_alias_or_the_default_behind_each_setting(relay: InMemory) -> None:
    text, data = await doctor(
        relay, GEMINI_MCP_TIMEOUT="10", GEMINI_OUTPUT_DIR=str(relay.base / "out"), GEMINI_HEARTBEAT_MS="0"
    )
    lines = data["sections"]["settings"]
    assert "- timeout: `GEMINI_MCP_TIMEOUT=10`" in lines
    assert f"- media dir: `GEMINI_OUTPUT_DIR={relay.base / 'out'}`, alias of `GEMINI_RELAY_MEDIA_DIR`" in lines
    assert "- progress interval: `GEMINI_HEARTBEAT_MS=0`" in lines
    defaults = next(line for line in lines if line.startswith("- unset, so the default: ")).split(": ", 1)[1]
    assert {"max concurrent", "wait cap"} <= set(defaults.split(", ")) and "timeout" not in defaults.split(", ")
    assert "\n".join(lines) in text


async def test_the_relays_own_name_wins_over_the_seeds_alias_and_says_so(relay: InMemory) -> None:
    _, data = await doctor(
        relay, GEMINI_RELAY_MEDIA_DIR=str(relay.base / "mine"), GEMINI_OUTPUT_DIR=str(relay.base / "seed")
    )
    assert f"- media dir: `GEMINI_RELAY_MEDIA_DIR={relay.base / 'mine'}`" in data["sections"]["settings"]


async def test_a_secrets_origin_is_named_without_its_value(relay: InMemory) -> None:
    text, data = await doctor(relay, GEMINI_API_KEY="sk-secret-value-1234", GEMINI_RELAY_HTTP_TOKEN="tok-abcdef")
    assert "- API key: `GEMINI_API_KEY` (value not shown)" in data["sections"]["settings"]
    assert "- HTTP token: `GEMINI_RELAY_HTTP_TOKEN` (value not shown)" in data["sections"]["settings"]
    assert "sk-secret-value" not in text and "tok-abcdef" not in text
