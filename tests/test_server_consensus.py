"""gemini-consensus end to end: the MCP client, the server over stdio, the emulator answering each model its own way.
On the real Gemini CLI 0.61.0 (cold) two models answer and one synthesis call names them, the usage of all three
calls summed; as an MCP task (on the api backend) the consensus runs on its jobs. The api backend's panel, a failing
model and a dryRun: tests/inmemory/test_consensus_api.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.consensus_panel import (
    FLASH,
    JUDGE,
    PANEL,
    PRO,
    REVIEW,
    assert_two_answers_and_a_synthesis_naming_them,
    by_model,
    data_of,
)
from tests.fakes.fake_gemini_api import USAGE
from tests.harness import Relay
from tests.task_client import task_client
from tests.test_server_api import api

pytestmark = pytest.mark.anyio


async def test_on_the_gemini_cli_two_models_answer_and_the_synthesis_names_them(relay: Relay) -> None:
    by_model(relay.api, "Flash: no, wait for Monday.")
    async with relay.client(**REVIEW) as client:
        result = await client.call_tool("gemini-consensus", PANEL)
    data = data_of(result)
    answers = {a["label"]: a for a in data["answers"]}
    assert answers[PRO]["text"] == "Pro: yes, ship it."
    assert answers[f"{FLASH} (against)"]["text"] == "Flash: no, wait for Monday."
    assert f'<answer model="{PRO}"' in data["synthesis"]["text"]
    assert data["usage"]["input_tokens"] >= 3 * USAGE["promptTokenCount"]  # all three calls counted
    assert {r.body.get("model") or r.path.split("/models/")[1].split(":")[0] for r in relay.main_requests()} >= {
        PRO,
        FLASH,
        JUDGE,
    }


async def test_as_an_mcp_task_the_consensus_runs_on_its_jobs_and_the_task_is_its_first_job(
    relay: Relay, tmp_path: Path
) -> None:
    by_model(relay.api, "Flash: no, wait for Monday.")
    env = {
        k: v for k, v in {**REVIEW, **api(relay, tmp_path / "state")}.items() if v is not None
    }  # GEMINI_MCP_BACKEND=api
    async with task_client(relay, env=env) as client:
        created = await client.call("gemini-consensus", PANEL)
        done = await client.until_done(created["taskId"])
    assert created["resultType"] == "task" and done["status"] == "completed"
    data = done["result"]["structuredContent"]
    assert_two_answers_and_a_synthesis_naming_them(data)
    assert created["taskId"] == data["answers"][0]["job_id"]
