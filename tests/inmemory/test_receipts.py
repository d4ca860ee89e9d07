"""Receipts in memory: every tool that runs a model, on the scripted Gemini CLI and on the real api backend (the
emulator), ends its text with one receipt line and carries the receipt in structuredContent, valid against its
outputSchema; each field tells the truth (the model served and the one asked for, partial, warm or cold, tokens,
the job gemini-status collects); and a run that failed to start or answered nothing is an error that says why,
never a success. The real Gemini CLI's warm and cold receipts: tests/test_server_warm.py."""

from __future__ import annotations

from typing import Any

import mcp_types as types
import pytest

from gemini_relay.core.vocabulary import FailureReason
from gemini_relay.errors import RunFailed
from tests.fakes.fake_gemini_api import FakeGeminiApi
from tests.inmemory.conftest import RECEIPT_LINE, InMemory, on_the_api, text_of
from tests.inmemory.scripted import USAGE, Script, answer
from tests.tools.test_output_schemas import valid

pytestmark = pytest.mark.anyio

TOOLSETS = {"GEMINI_RELAY_TOOLSETS": "jobs,review"}
JSON_SCHEMA = {"type": "object"}
# Each tool that runs a model, with arguments for one call (a JSON answer where the tool validates one).
CALLS: dict[str, dict[str, Any]] = {
    "gemini-ask": {"prompt": "a question"},
    "gemini-plan": {"task": "a plan"},
    "gemini-brainstorm": {"prompt": "ideas"},
    "gemini-search": {"query": "what is new"},
    "gemini-structured": {"prompt": "give n", "schema": JSON_SCHEMA},
    "gemini-consensus": {"prompt": "a decision"},
    "gemini-run": {"prompt": "a job", "wait": 30},
}
JSON_ANSWER = {"gemini-structured"}  # the text is the JSON alone: the receipt is in the data only
BACKENDS = ("gemini", "api")


def _env(backend: str, emulator: FakeGeminiApi) -> dict[str, str]:
    return {**TOOLSETS, **(on_the_api(emulator) if backend == "api" else {})}


def _receipt(result: types.CallToolResult) -> dict[str, Any]:
    assert not result.is_error, text_of(result)
    data = result.structured_content or {}
    receipt: dict[str, Any] = data["receipt"]
    return receipt


@pytest.mark.parametrize("backend", BACKENDS)
async def test_every_tool_that_runs_a_model_answers_with_a_receipt_on_every_backend(
    relay: InMemory, emulator: FakeGeminiApi, backend: str
) -> None:
    results: dict[str, types.CallToolResult] = {}
    async with relay.client(**_env(backend, emulator)) as client:
        schemas = {t.name: t.output_schema for t in (await client.list_tools()).tools}
        for name, args in CALLS.items():
            if name in JSON_ANSWER and backend == "gemini":
                relay.backend.queue(answer('{"n": 3}'))
            results[name] = await client.call_tool(name, args)
        # The job of each receipt is the one gemini-status collects.
        ask_job = _receipt(results["gemini-ask"])["job_id"]
        status = await client.call_tool("gemini-status", {"jobId": ask_job})
    for name, result in results.items():
        receipt = _receipt(result)
        schema = schemas[name]
        assert schema is not None, name
        valid(schema, result.structured_content)
        assert receipt["backend"] == backend and receipt["run_id"] and receipt["finish_reason"], name
        assert receipt["model"] and receipt["tokens"] and receipt["total_seconds"] >= receipt["queued_seconds"] >= 0
        assert receipt["first_byte_seconds"] is not None and receipt["partial"] is False, name
        text = text_of(result)
        line = RECEIPT_LINE.search(text)
        if name in JSON_ANSWER:
            assert line is None, text
            continue
        if name == "gemini-consensus":  # three runs, one line
            jobs = ", ".join(r["job_id"] for r in (result.structured_content or {})["receipts"])
            assert text.endswith(f" via {backend} · 69 tokens · jobs {jobs}"), text
            continue
        assert line is not None, (name, text)
        assert line["backend"] == backend and line["model"] in receipt["model"]
        job = receipt["job_id"] or receipt["run_id"]
        assert line["job"] == job and line["tokens"] is not None
        assert (result.structured_content or {})["text"].endswith(line[0].lstrip("\n")), name
    panel = results["gemini-consensus"].structured_content or {}
    assert len(panel["receipts"]) == 3 and panel["receipts"][-1] == panel["receipt"]  # two members, the synthesis
    assert (status.structured_content or {})["receipt"]["job_id"] == ask_job
    assert _receipt(status) == _receipt(results["gemini-ask"])


async def test_the_receipt_shows_the_model_the_upstream_served_and_the_one_asked_for_when_they_differ(
    relay: InMemory,
) -> None:
    relay.backend.queue(Script(("Answered by flash.",), served=("gemini-2.5-flash",)), answer("Same model."))
    async with relay.client() as client:
        fell_back = await client.call_tool("gemini-ask", {"prompt": "q", "model": "gemini-2.5-pro"})
        same = await client.call_tool("gemini-ask", {"prompt": "q", "model": "gemini-2.5-pro", "effort": "high"})
    receipt = _receipt(fell_back)
    assert receipt["model"] == "gemini-2.5-flash" and receipt["requested_model"] == "gemini-2.5-pro"
    line = RECEIPT_LINE.search(text_of(fell_back))
    assert line is not None and (line["model"], line["asked"]) == ("gemini-2.5-flash", "gemini-2.5-pro")
    kept = _receipt(same)
    assert kept["model"] == "gemini-2.5-pro" and kept["requested_model"] is None and kept["effort"] == "high"
    assert "(asked" not in text_of(same)


async def test_the_receipt_says_whether_the_answer_is_partial_and_whether_the_run_was_warm_or_cold(
    relay: InMemory,
) -> None:
    relay.backend.queue(
        Script(("Cut short.",), partial=True, warm=False), Script(("Warm.",), warm=True), answer("No process.")
    )
    async with relay.client() as client:
        results = [await client.call_tool("gemini-ask", {"prompt": f"q{n}"}) for n in range(3)]
    receipts = [_receipt(r) for r in results]
    assert [r["partial"] for r in receipts] == [True, False, False]
    assert [r["warm"] for r in receipts] == [False, True, None]
    lines = [RECEIPT_LINE.search(text_of(r)) for r in results]
    assert [(m["warm"], bool(m["partial"])) for m in lines if m] == [("cold", True), ("warm", False), (None, False)]


async def test_the_receipt_counts_the_runs_tokens_and_its_conversation(relay: InMemory) -> None:
    async with relay.client() as client:
        result = await client.call_tool("gemini-ask", {"prompt": "count"})
    receipt = _receipt(result)
    assert receipt["tokens"]["total_tokens"] == USAGE.total_tokens
    assert receipt["conversation_id"] and receipt["conversation_id"] in text_of(result)
    line = RECEIPT_LINE.search(text_of(result))
    assert line is not None and line["tokens"] == str(USAGE.total_tokens)


# --- a result never exists without a run ------------------------------------------------------------------------

FAILING = {name: args for name, args in CALLS.items() if name != "gemini-run"}  # a job's failure: its status says it
SPAWN_FAILED = "gemini could not be started: not installed"


def _failing(relay: InMemory, script: Script) -> None:
    """Every run of the call plays `script` (a consensus panel runs three)."""
    relay.backend.queue(*[script] * 4)
    relay.backend.by_model.update(dict.fromkeys(("pro", "flash", "gemini-2.5-pro"), script))


@pytest.mark.parametrize("name", list(FAILING))
async def test_a_run_that_failed_to_start_is_an_error_naming_why_never_a_success(relay: InMemory, name: str) -> None:
    _failing(relay, Script((), error=RunFailed(SPAWN_FAILED, reason=FailureReason.SPAWN_FAILED)))
    async with relay.client(**TOOLSETS) as client:
        result = await client.call_tool(name, FAILING[name])
    assert result.is_error and result.structured_content is None
    assert text_of(result).startswith(f"Error executing {name}: ") and SPAWN_FAILED in text_of(result)


@pytest.mark.parametrize("name", list(FAILING))
async def test_an_empty_upstream_answer_is_an_error_naming_why_never_a_success(relay: InMemory, name: str) -> None:
    _failing(relay, Script(("",)))
    async with relay.client(**TOOLSETS) as client:
        result = await client.call_tool(name, FAILING[name])
    assert result.is_error and result.structured_content is None, text_of(result)
    assert "finished without any answer text" in text_of(result)


@pytest.mark.parametrize("prompt", ["[[fake:empty]] hi", "[[fake:empty_after_tool]] hi"])
async def test_an_empty_answer_of_the_api_is_an_error_naming_why(
    relay: InMemory, emulator: FakeGeminiApi, prompt: str
) -> None:
    async with relay.client(**on_the_api(emulator)) as client:
        result = await client.call_tool("gemini-ask", {"prompt": prompt})
    assert result.is_error and result.structured_content is None, text_of(result)
    assert text_of(result).startswith("Error executing gemini-ask: ")


async def test_a_job_whose_run_answered_nothing_is_failed_with_the_reason_and_no_receipt(relay: InMemory) -> None:
    relay.backend.queue(Script(("",)))
    async with relay.client(**TOOLSETS) as client:
        result = await client.call_tool("gemini-run", {"prompt": "a job", "wait": 30})
    data = result.structured_content or {}
    assert data["state"] == "failed" and "finished without any answer text" in data["error"]
    assert "receipt" not in data and RECEIPT_LINE.search(text_of(result)) is None
