"""gemini-consensus end to end: the MCP client, the server over stdio, the emulator answering each model its own way.
On the real Gemini CLI 0.61.0 (cold) two models answer and one synthesis call (asked for JSON in its prompt) tags
each finding by who raised it, the usage of all three calls summed; a review ends with a verdict; a failing model is
replaced from the fallback chain; a synthesis that is not valid JSON gives the answers untagged. As an MCP task (on
the api backend) the consensus runs on its jobs. The api backend's panel, a failing model and a dryRun:
tests/inmemory/test_consensus_api.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp import Client

from tests.consensus_panel import (
    AGAINST,
    FLASH,
    JUDGE,
    LITE,
    PANEL,
    PRO,
    REVIEW,
    assert_judge_saw_both_answers,
    assert_tagged,
    assert_two_answers_and_a_synthesis_naming_them,
    by_model,
    data_of,
    prompt_of,
)
from tests.fakes.fake_gemini_api import USAGE, LoggedRequest
from tests.harness import Relay, fresh_case, module_event_loop, shared_server
from tests.task_client import task_client
from tests.test_server_api import api
from tests.test_server_surface import text_of

pytestmark = pytest.mark.anyio

# The cases on the cold CLI share one server (each sets its models' answers); the task case runs on the api backend.
anyio_backend = module_event_loop()
cli_world, cli_client = shared_server("cli", REVIEW)


def _model_of(request: LoggedRequest) -> str:
    return str(request.body.get("model") or request.path.split("/models/")[1].split(":")[0])


async def test_on_the_gemini_cli_a_review_tags_each_finding_by_who_raised_it_and_ends_with_a_verdict(
    cli_world: Relay, cli_client: Client
) -> None:
    fresh_case(cli_world)
    by_model(cli_world.api, "Flash: no, wait for Monday.")
    result = await cli_client.call_tool("gemini-consensus", {**PANEL, "review": True})
    data = data_of(result)
    answers = {a["label"]: a for a in data["answers"]}
    assert answers[PRO]["text"] == "Pro: yes, ship it."
    assert answers[AGAINST]["text"] == "Flash: no, wait for Monday."
    assert_tagged(data, review=True)
    assert "**Verdict: fix first**" in text_of(result)
    assert data["usage"]["input_tokens"] >= 3 * USAGE["promptTokenCount"]  # all three calls counted
    assert {_model_of(r) for r in cli_world.main_requests()} >= {PRO, FLASH, JUDGE}
    judge = next(r for r in cli_world.main_requests() if _model_of(r) == JUDGE)
    assert_judge_saw_both_answers(prompt_of(judge))


async def test_on_the_gemini_cli_a_failing_model_is_replaced_from_the_fallback_chain(
    cli_world: Relay, cli_client: Client
) -> None:
    fresh_case(cli_world)
    judge = {
        "findings": [{"text": "Wait.", "found_by": [f"{LITE} (against)"]}],
        "disagreements": [],
        "recommendation": "Wait.",
    }
    by_model(cli_world.api, 400, judge, **{LITE: "Lite: wait for Monday."})
    result = await cli_client.call_tool("gemini-consensus", {**PANEL, "fallback": [LITE]})
    data = data_of(result)
    assert data["panel"]["replaced"] == [{"missing": AGAINST, "stood_in": f"{LITE} (against)"}]
    assert next(a for a in data["answers"] if a["model"] == LITE)["text"] == "Lite: wait for Monday."
    assert data["findings"][0]["found_by"] == [f"{LITE} (against)"]


async def test_on_the_gemini_cli_a_synthesis_that_is_not_valid_json_gives_the_answers_untagged(
    cli_world: Relay, cli_client: Client
) -> None:
    fresh_case(cli_world)
    by_model(cli_world.api, "Flash: no, wait for Monday.", '{"findings": "all good"}')
    result = await cli_client.call_tool("gemini-consensus", {**PANEL, "review": True})
    data = data_of(result)
    assert data["tagged"] is False and "findings" in data["untagged_because"] and data["verdict"] is None
    assert "Pro: yes, ship it." in text_of(result) and "Flash: no, wait for Monday." in text_of(result)


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
