"""gemini-consensus in memory: every model of the panel answers in parallel as its own job, one synthesis call
weighs them and names them; a model that fails is reported and the synthesis goes on; all failing is an error;
dryRun calls nothing; async returns the jobs and a collect with the same key bills nothing again."""

from __future__ import annotations

import json
from typing import Any

import anyio
import mcp_types as types
import pytest
from jsonschema import Draft202012Validator  # type: ignore[import-untyped]

from gemini_relay.core.spec import RunSpec
from gemini_relay.errors import RunFailed
from gemini_relay.tools.review.consensus_schema import CONSENSUS
from tests.inmemory.conftest import InMemory, text_of
from tests.inmemory.scripted import USAGE, Script, answer

pytestmark = pytest.mark.anyio
REVIEW = {"GEMINI_RELAY_TOOLSETS": "review"}
QUESTION = "Should we rewrite the parser in Rust?"
SYNTHESIS = json.dumps(
    {
        "findings": [{"text": "The team's skills weigh most.", "found_by": ["pro", "flash"]}],
        "disagreements": [],
        "recommendation": "Keep it.",
    }
)


def data_of(result: types.CallToolResult) -> dict[str, Any]:
    assert not result.is_error, text_of(result)
    data: dict[str, Any] | None = result.structured_content
    assert data is not None
    errors = [e.message for e in Draft202012Validator(CONSENSUS).iter_errors(data)]
    assert not errors, errors
    return data


def panel_specs(relay: InMemory) -> list[Any]:
    return [s for s in relay.backend.specs if s.json_schema is None]


def synthesis_specs(relay: InMemory) -> list[Any]:
    return [s for s in relay.backend.specs if s.json_schema is not None]  # the judge answers JSON


async def test_two_models_answer_and_a_synthesis_names_them_with_the_usage_of_all_three_calls(
    relay: InMemory,
) -> None:
    relay.backend.by_model["pro"] = answer("Yes: memory safety. Recommendation: rewrite.")
    relay.backend.by_model["flash"] = answer("No: the team knows Python. Recommendation: keep it.")
    relay.backend.by_model["judge"] = answer(SYNTHESIS)
    async with relay.client(**REVIEW) as client:
        result = await client.call_tool("gemini-consensus", {"prompt": QUESTION, "synthesisModel": "judge"})
    data = data_of(result)
    answers = {a["label"]: a for a in data["answers"]}
    assert answers["pro"]["text"].startswith("Yes: memory safety") and answers["pro"]["ok"]
    assert answers["flash"]["text"].startswith("No: the team knows Python")
    assert all(a["usage"]["input_tokens"] == USAGE.input_tokens and a["job_id"] for a in data["answers"])
    assert data["usage"]["input_tokens"] == 3 * USAGE.input_tokens  # two answers and the synthesis
    assert data["usage"]["output_tokens"] == 3 * USAGE.output_tokens
    (judge,) = synthesis_specs(relay)
    assert '<answer model="pro"' in judge.prompt and '<answer model="flash"' in judge.prompt
    assert "Yes: memory safety" in judge.prompt and judge.model == "judge"
    assert data["synthesis"]["ok"] and data["tagged"]
    assert data["findings"] == [
        {"text": "The team's skills weigh most.", "found_by": ["pro", "flash"], "agreement": "all"}
    ]
    assert data["synthesis"]["usage"]["output_tokens"] == USAGE.output_tokens
    assert "## Found by all\n\n- The team's skills weigh most." in text_of(result)
    assert {s.model for s in panel_specs(relay)} == {"pro", "flash"}
    assert all(s.mode == "plan" for s in relay.backend.specs)
    assert data["failed"] == []


async def test_one_failing_model_is_reported_and_the_synthesis_goes_on_with_the_rest(relay: InMemory) -> None:
    relay.backend.by_model["pro"] = Script(error=RunFailed("upstream 503: the model is overloaded"))
    relay.backend.by_model["flash"] = answer("Keep Python.")
    async with relay.client(**REVIEW) as client:
        result = await client.call_tool("gemini-consensus", {"prompt": QUESTION})
    data = data_of(result)
    pro = next(a for a in data["answers"] if a["label"] == "pro")
    assert not pro["ok"] and "overloaded" in pro["error"] and "text" not in pro
    assert data["failed"] == ["pro"]
    (judge,) = synthesis_specs(relay)
    assert judge.model == "flash" and "must not be cited: pro" in judge.prompt
    assert '<answer model="pro"' not in judge.prompt
    assert "No answer from pro (upstream 503: the model is overloaded); nobody stood in." in text_of(result)
    assert data["synthesis"]["ok"] and data["panel"] == {"answered": ["flash"], "replaced": [], "missing": ["pro"]}


async def test_the_models_run_in_parallel(relay: InMemory) -> None:
    both = anyio.Event()  # released only once both models are running: one after the other would never get there
    running: list[str] = []

    def started(spec: RunSpec) -> None:
        running.append(spec.model or "")
        if len(running) == 2:
            both.set()

    relay.backend.on_run = started
    relay.backend.by_model["pro"] = Script(("pro says yes",), hold=both)
    relay.backend.by_model["flash"] = Script(("flash says no",), hold=both)
    async with relay.client(**REVIEW) as client:
        data = data_of(await client.call_tool("gemini-consensus", {"prompt": QUESTION, "synthesisModel": "j"}))
    assert sorted(running[:2]) == ["flash", "pro"] and data["failed"] == []


async def test_every_model_failing_is_a_clear_error_and_no_synthesis_runs(relay: InMemory) -> None:
    relay.backend.by_model["pro"] = Script(error=RunFailed("pro is down"))
    relay.backend.by_model["flash"] = Script(error=RunFailed("flash is down"))
    async with relay.client(**REVIEW) as client:
        result = await client.call_tool("gemini-consensus", {"prompt": QUESTION})
    assert result.is_error
    text = text_of(result)
    assert "Every model of the consensus failed" in text and "pro is down" in text and "flash is down" in text
    assert synthesis_specs(relay) == []


async def test_stances_shape_each_prompt_and_label_each_answer(relay: InMemory) -> None:
    models = [
        {"model": "pro", "stance": "for"},
        {"model": "pro", "stance": "against"},
        {"model": "flash", "stance": "neutral"},
        "flash",
    ]
    async with relay.client(**REVIEW) as client:
        data = data_of(
            await client.call_tool("gemini-consensus", {"prompt": QUESTION, "models": models, "synthesisModel": "x"})
        )
    assert [a["label"] for a in data["answers"]] == ["pro (for)", "pro (against)", "flash (neutral)", "flash"]
    assert [a["stance"] for a in data["answers"]] == ["for", "against", "neutral", None]
    prompts = [s.prompt.split("\n\n")[1] for s in panel_specs(relay)]
    assert any("FOR" in p for p in prompts) and any("AGAINST" in p for p in prompts)
    assert any("balanced" in p for p in prompts) and any("on its merits" in p for p in prompts)
    (judge,) = synthesis_specs(relay)
    assert judge.model == "x"


@pytest.mark.parametrize(
    ("models", "expected"),
    [
        ([{"model": "pro", "stance": "maybe"}], "stance"),
        ([{"model": "pro", "stance": "FOR"}], "stance"),
        ([{"model": "pro", "opinion": "for"}], "opinion"),
        ([], "models"),
        (["pro"] * 9, "models"),
        ([{"model": "pro", "backend": "nope"}], "'nope' is not a backend of this server"),
    ],
)
async def test_a_bad_panel_is_refused_before_any_model_runs(relay: InMemory, models: list[Any], expected: str) -> None:
    async with relay.client(**REVIEW) as client:
        result = await client.call_tool("gemini-consensus", {"prompt": QUESTION, "models": models})
    assert result.is_error
    assert expected in text_of(result)
    assert relay.backend.specs == []


async def test_a_dry_run_prices_each_prompt_and_calls_no_model(relay: InMemory) -> None:
    models = [{"model": "pro", "stance": "for"}, "flash"]
    async with relay.client(**REVIEW) as client:
        result = await client.call_tool("gemini-consensus", {"prompt": QUESTION, "models": models, "dryRun": True})
    data = data_of(result)
    assert relay.backend.specs == []
    assert data["dry_run"] is True
    assert [a["model"] for a in data["answers"]] == ["gemini-3.1-pro-preview", "gemini-3.8-flash"]
    assert all(a["input_tokens"] > len(QUESTION) // 4 and a["token_method"] == "estimated" for a in data["answers"])
    assert data["input_tokens"] == sum(a["input_tokens"] for a in data["answers"])
    assert "estimated at 4 characters a token" in text_of(result)


async def test_async_returns_the_jobs_and_a_collect_with_the_key_bills_nothing_again(relay: InMemory) -> None:
    args = {"prompt": QUESTION, "async": True, "idempotencyKey": "decision-1"}
    async with relay.client(**REVIEW) as client:
        started = data_of(await client.call_tool("gemini-consensus", args))
        assert started["state"] == "running" and started["idempotency_key"] == "decision-1"
        assert len({a["job_id"] for a in started["answers"]}) == 2
        collected = data_of(await client.call_tool("gemini-consensus", {**args, "async": False}))
        again = data_of(await client.call_tool("gemini-consensus", {**args, "async": False}))
    assert [a["job_id"] for a in collected["answers"]] == [a["job_id"] for a in started["answers"]]
    assert collected["synthesis"]["job_id"] == again["synthesis"]["job_id"]
    assert again["usage"] == collected["usage"]
    assert len(panel_specs(relay)) == 2 and len(synthesis_specs(relay)) == 1  # each call billed once


async def test_the_same_key_with_another_question_is_refused(relay: InMemory) -> None:
    async with relay.client(**REVIEW) as client:
        first = await client.call_tool("gemini-consensus", {"prompt": QUESTION, "idempotencyKey": "k"})
        other = await client.call_tool("gemini-consensus", {"prompt": "Another question?", "idempotencyKey": "k"})
    data_of(first)
    assert other.is_error and "idempotency" in text_of(other).lower()


async def test_a_model_no_backend_could_run_is_refused_before_any_job_exists(relay: InMemory) -> None:
    async with relay.client(GEMINI_RELAY_TOOLSETS="review,jobs") as client:
        result = await client.call_tool("gemini-consensus", {"prompt": QUESTION, "models": ["pro", "-rf"]})
        jobs = await client.call_tool("gemini-jobs", {})
    assert result.is_error and "model" in text_of(result)
    assert relay.backend.specs == []
    assert (jobs.structured_content or {})["count"] == 0  # no first model's job left queued for adoption


async def test_timeout_seconds_is_each_call_s_deadline_and_above_the_server_s_maximum_is_refused(
    relay: InMemory,
) -> None:
    relay.backend.by_model["judge"] = answer(SYNTHESIS)
    async with relay.client(**REVIEW) as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}["gemini-consensus"]
        maximum = listed.input_schema["properties"]["timeoutSeconds"]["maximum"]
        refused = await client.call_tool(
            "gemini-consensus", {"prompt": QUESTION, "timeoutSeconds": maximum + 1, "synthesisModel": "judge"}
        )
        assert refused.is_error and "timeoutSeconds" in text_of(refused) and "GEMINI_MCP_TIMEOUT" in text_of(refused)
        assert relay.backend.specs == []
        data_of(
            await client.call_tool(
                "gemini-consensus", {"prompt": QUESTION, "timeoutSeconds": 42, "synthesisModel": "judge"}
            )
        )
    assert [s.timeout_seconds for s in relay.backend.specs] == [42, 42, 42]  # both answers and the synthesis


async def test_a_synthesis_model_no_backend_could_run_is_refused_naming_the_field_before_any_job(
    relay: InMemory,
) -> None:
    async with relay.client(**REVIEW) as client:
        refused = await client.call_tool("gemini-consensus", {"prompt": QUESTION, "synthesisModel": "%bad\u0001id"})
    assert refused.is_error
    assert text_of(refused).startswith(
        "Error executing gemini-consensus: Invalid arguments for gemini-consensus: synthesisModel: must be a model id"
    ), text_of(refused)
    assert relay.backend.specs == []  # no panel answer ran (and was billed) before the refusal
