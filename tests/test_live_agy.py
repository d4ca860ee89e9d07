"""The agy contract against a real, logged-in agy: opt-in with GEMINI_RELAY_LIVE=1 (it spends real quota)."""

from __future__ import annotations

import os
import re
import shutil
import sys
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from tests.test_server_surface import text_of

LIVE = os.environ.get("GEMINI_RELAY_LIVE") == "1"
pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(not LIVE, reason="live agy tests run only with GEMINI_RELAY_LIVE=1 and a logged-in agy"),
]


def live_params(project: Path) -> StdioServerParameters:
    agy = os.environ.get("AGY_CLI_PATH") or shutil.which("agy")
    if agy is None:
        pytest.fail("GEMINI_RELAY_LIVE=1 but agy is not on PATH (or set AGY_CLI_PATH)")
    # The real HOME on purpose: agy needs its own login state. Nothing else from the environment goes along.
    env = {"HOME": os.environ["HOME"], "PATH": os.environ["PATH"], "AGY_CLI_PATH": agy, "GEMINI_MCP_BACKEND": "agy"}
    env["GEMINI_RELAY_PROJECT_ROOT"] = str(project)
    return StdioServerParameters(command=sys.executable, args=["-m", "gemini_relay"], env=env, cwd=str(project))


async def test_live_agy_answers_and_continues_a_conversation(tmp_path: Path) -> None:
    async with Client(stdio_client(live_params(tmp_path)), mode="legacy") as client:
        first = await client.call_tool("gemini-ask", {"prompt": "Reply with exactly the word: pang"})
        match = re.search(r"🧵 conversationId: (\S+)", text_of(first))
        assert match is not None, text_of(first)
        second = await client.call_tool(
            "gemini-ask", {"prompt": "Repeat your previous reply.", "conversationId": match.group(1)}
        )
    assert text_of(first).startswith("Gemini response:\n") or text_of(first).startswith("⚠️")
    assert "pang" in text_of(second).lower()


async def test_live_agy_doctor_reads_quota_without_a_model_turn(tmp_path: Path) -> None:
    async with Client(stdio_client(live_params(tmp_path)), mode="legacy") as client:
        result = await client.call_tool("gemini-doctor", {})
    assert "### Login & Quota" in text_of(result)


async def test_live_agy_models_are_live(tmp_path: Path) -> None:
    async with Client(stdio_client(live_params(tmp_path)), mode="legacy") as client:
        result = await client.call_tool("gemini-models", {})
    assert "⚠️" not in text_of(result)
