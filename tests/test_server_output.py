"""Output discipline end to end through the MCP client, the real Gemini CLI 0.61.0 and the emulator: what only the
real CLI shows — the repair turn continuing the CLI's own conversation in plan mode, and the changeMode guardrail
seeing files the CLI's agent really wrote. The tools' output rules themselves (schema checks, the repair turn,
the capacity fallback, chunking, maxResponseLength, changeMode rendering) are proved in memory: inmemory/
test_structured.py, test_fallback.py, test_chunks.py, test_prompts.py, test_changemode.py."""

from __future__ import annotations

import json

import pytest

from tests.git_repo import GitRepo
from tests.harness import Relay
from tests.test_server_review import REVIEW, tool_names
from tests.test_server_surface import text_of

pytestmark = pytest.mark.anyio

PERSON = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "email": {"type": "string", "format": "email"}},
    "required": ["name", "email"],
}


async def test_an_invalid_answer_gets_one_repair_turn_on_the_same_read_only_cli_conversation(relay: Relay) -> None:
    bad = '```json\n{"name": "Ada", "email": "not-an-email"}\n```'
    relay.api.set_scenario("json_turns", json.dumps([bad, '{"name": "Ada", "email": "ada@example.com"}']))
    async with relay.client(**REVIEW) as client:
        result = await client.call_tool("gemini-structured", {"prompt": "who?", "schema": PERSON})
    assert not result.is_error, text_of(result)
    assert json.loads(text_of(result)) == {"name": "Ada", "email": "ada@example.com"}
    assert result.meta is not None and result.meta["repaired"] is True
    first, second = relay.main_requests()
    assert "exit_plan_mode" in tool_names(first.body)  # --approval-mode plan reached the CLI
    repair = second.body["contents"]
    assert len(repair) == 3  # the first turn, the model's answer, the repair turn: one conversation
    assert "at $.email: 'not-an-email' is not a 'email'" in json.dumps(repair[-1])


async def test_change_mode_withholds_the_edits_when_the_agent_wrote_files(relay: Relay) -> None:
    GitRepo.create(relay.project, {"app.py": "def main():\n    return 1\n"})
    async with relay.client() as client:
        result = await client.call_tool(
            "gemini-ask", {"prompt": "[[fake:write_file]] bump it", "changeMode": True, "skipPermissions": True}
        )
    assert not result.is_error, text_of(result)
    text = text_of(result)
    assert text.startswith("⚠️ The agent changed files in the working tree during this run: written.txt.")
    assert "Its edits were withheld" in text and "### Edit" not in text
    assert result.meta == {"appliedWrites": True, "changedFiles": ["written.txt"]}
    assert (relay.project / "written.txt").exists()
