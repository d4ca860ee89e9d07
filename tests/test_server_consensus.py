"""gemini-consensus end to end: the MCP client, the server over stdio, the emulator answering each model its own way;
on the API backend (google-genai) and on the real Gemini CLI 0.61.0 (cold). Two models answer, one synthesis call
names them, the usage of all three calls is summed; a model the emulator fails is reported and the synthesis goes on;
a dryRun sends the emulator no generate request."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest

from tests.fakes.fake_gemini_api import USAGE
from tests.harness import Relay
from tests.task_client import task_client
from tests.test_server_api import api
from tests.test_server_surface import text_of

pytestmark = pytest.mark.anyio

REVIEW = {"GEMINI_RELAY_TOOLSETS": "review"}
PRO, FLASH, JUDGE = "gemini-2.5-pro", "gemini-2.5-flash", "gemini-3.1-pro-preview"
PANEL = {"prompt": "Ship on Friday?", "models": [PRO, {"model": FLASH, "stance": "against"}], "synthesisModel": JUDGE}


def generate_requests(relay: Relay) -> list[Any]:
    return [r for r in relay.api.requests if "enerateContent" in r.path]


def data_of(result: types.CallToolResult) -> dict[str, Any]:
    assert not result.is_error, text_of(result)
    data: dict[str, Any] | None = result.structured_content
    assert data is not None
    return data


def assert_two_answers_and_a_synthesis_naming_them(data: dict[str, Any], *, calls_each: int = 1) -> None:
    answers = {a["label"]: a for a in data["answers"]}
    assert answers[PRO]["text"] == "Pro: yes, ship it." and answers[PRO]["model"] == PRO
    assert answers[f"{FLASH} (against)"]["text"] == "Flash: no, wait for Monday."
    synthesis = data["synthesis"]
    assert synthesis["ok"] and synthesis["model"] == JUDGE
    # The emulator's echo of the synthesis prompt: it holds both answers under their labels.
    assert f'<answer model="{PRO}"' in synthesis["text"] and f'<answer model="{FLASH} (against)"' in synthesis["text"]
    for call in [*data["answers"], synthesis]:
        assert call["usage"]["input_tokens"] == USAGE["promptTokenCount"] * calls_each
    assert data["usage"]["input_tokens"] == 3 * USAGE["promptTokenCount"] * calls_each  # all three calls
    assert data["estimated_usd"] is not None and data["estimated_usd"] > 0


def by_model(relay: Relay, flash: str | int) -> None:
    relay.api.set_scenario("by_model", json.dumps({PRO: "Pro: yes, ship it.", FLASH: flash}))


async def test_on_the_api_backend_two_models_answer_and_the_synthesis_names_them(relay: Relay, tmp_path: Path) -> None:
    by_model(relay, "Flash: no, wait for Monday.")
    async with relay.client(**REVIEW, **api(relay, tmp_path / "state")) as client:
        result = await client.call_tool("gemini-consensus", PANEL)
    assert_two_answers_and_a_synthesis_naming_them(data_of(result))
    models = sorted(r.path.split("/models/")[1].split(":")[0] for r in generate_requests(relay))
    assert models == sorted([PRO, FLASH, JUDGE])
    assert "## Synthesis" in text_of(result) and f"### {PRO}" in text_of(result)


async def test_on_the_api_backend_a_failing_model_is_reported_and_the_synthesis_goes_on(
    relay: Relay, tmp_path: Path
) -> None:
    by_model(relay, 404)
    async with relay.client(**REVIEW, **api(relay, tmp_path / "state")) as client:
        result = await client.call_tool("gemini-consensus", PANEL)
    data = data_of(result)
    flash = next(a for a in data["answers"] if a["model"] == FLASH)
    assert not flash["ok"] and flash["error"] and data["failed"] == [f"{FLASH} (against)"]
    assert data["synthesis"]["ok"] and "must not be counted" in data["synthesis"]["text"]
    assert f"No answer from {FLASH} (against)" in text_of(result)


async def test_on_the_api_backend_a_dry_run_sends_no_generate_request(relay: Relay, tmp_path: Path) -> None:
    async with relay.client(**REVIEW, **api(relay, tmp_path / "state")) as client:
        result = await client.call_tool("gemini-consensus", {**PANEL, "dryRun": True})
    data = data_of(result)
    assert data["dry_run"] and [a["model"] for a in data["answers"]] == [PRO, FLASH]
    assert all(a["estimated_usd"] is not None for a in data["answers"])
    assert all(a["token_method"] == "counted" for a in data["answers"])  # the API's countTokens, as gemini-ask's
    assert "counted by the API" in data["token_method"]
    assert generate_requests(relay) == []


async def test_on_the_gemini_cli_two_models_answer_and_the_synthesis_names_them(relay: Relay) -> None:
    by_model(relay, "Flash: no, wait for Monday.")
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
    by_model(relay, "Flash: no, wait for Monday.")
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
