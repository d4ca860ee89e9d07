"""A run's question reaches the MCP client as elicitation/create, through the relay host's wire, and the user's
choice comes back to the run; a client that cannot answer, a decline and a timeout leave it to the policy."""

from __future__ import annotations

import anyio
import mcp_types as types
import pytest

from gemini_relay.backends.asking import Answer, AskOutcome, Option, Question
from tests.elicitation import OFF_SCHEMA, Recorder, accept, let_the_client_send_anything, off_schema
from tests.inmemory.conftest import InMemory, text_of
from tests.inmemory.scripted import Script

pytestmark = pytest.mark.anyio

SHELL = Question(
    title="rm -rf build (execute)",
    action="rm -rf build",
    options=(
        Option("proceed_always", "Allow for this session", "allow_always"),
        Option("proceed_once", "Allow", "allow_once"),
        Option("cancel", "Reject", "reject_once"),
    ),
)


async def test_the_question_reaches_the_client_with_the_action_and_the_upstreams_options(relay: InMemory) -> None:
    recorder = Recorder(accept("proceed_once"))
    relay.backend.queue(Script(("Ran it.",), ask=SHELL))
    async with relay.asking_client(recorder) as client:
        result = await client.call_tool("gemini-ask", {"prompt": "clean up"})
    assert not result.is_error, text_of(result)
    [params] = recorder.asked
    assert "rm -rf build" in params.message
    choice = params.requested_schema["properties"]["choice"]
    assert choice["oneOf"] == [
        {"const": "proceed_always", "title": "Allow for this session"},
        {"const": "proceed_once", "title": "Allow"},
        {"const": "cancel", "title": "Reject"},
    ]
    assert relay.backend.answers == [Answer(AskOutcome.ANSWERED, "proceed_once")]
    assert "asked: answered proceed_once" in text_of(result)


async def test_a_refusal_chosen_by_the_user_reaches_the_run(relay: InMemory) -> None:
    relay.backend.queue(Script(("Did not run it.",), ask=SHELL))
    async with relay.asking_client(Recorder(accept("cancel"))) as client:
        await client.call_tool("gemini-ask", {"prompt": "clean up"})
    assert relay.backend.answers == [Answer(AskOutcome.ANSWERED, "cancel")]


async def test_a_client_without_elicitation_is_never_asked(relay: InMemory) -> None:
    relay.backend.queue(Script(("Policy.",), ask=SHELL))
    async with relay.client() as client:
        result = await client.call_tool("gemini-ask", {"prompt": "clean up"})
    assert relay.backend.answers == [Answer(AskOutcome.NO_ELICITATION)]
    assert "asked: no_elicitation" in text_of(result)


@pytest.mark.parametrize(
    "reply",
    [
        types.ElicitResult(action="decline"),
        types.ElicitResult(action="cancel"),
    ],
)
async def test_a_decline_leaves_the_decision_to_the_policy(relay: InMemory, reply: types.ElicitResult) -> None:
    relay.backend.queue(Script(("Policy.",), ask=SHELL))
    async with relay.asking_client(Recorder(reply)) as client:
        await client.call_tool("gemini-ask", {"prompt": "clean up"})
    assert relay.backend.answers == [Answer(AskOutcome.DECLINED)]


@pytest.mark.parametrize("raw", [*OFF_SCHEMA, {"action": "accept", "content": {"choice": "not-an-offered-option"}}])
async def test_an_answer_off_the_form_is_an_invalid_answer_named_at_once_and_never_asked_again(
    relay: InMemory, monkeypatch: pytest.MonkeyPatch, raw: dict[str, object]
) -> None:
    let_the_client_send_anything(monkeypatch)
    recorder = Recorder(off_schema(raw))
    relay.backend.queue(Script(("Policy.",), ask=SHELL))
    async with relay.asking_client(recorder, GEMINI_RELAY_ASK_TIMEOUT="600") as client:
        with anyio.fail_after(60):  # far under the ask timeout: the answer is judged when it comes, not waited out
            result = await client.call_tool("gemini-ask", {"prompt": "clean up"})
    assert len(recorder.asked) == 1
    assert relay.backend.answers == [Answer(AskOutcome.INVALID_ANSWER)]
    assert "asked: invalid_answer" in text_of(result)


async def test_an_unanswered_question_times_out_after_the_ask_timeout(relay: InMemory) -> None:
    recorder = Recorder(None)
    relay.backend.queue(Script(("Policy.",), ask=SHELL))
    async with relay.asking_client(recorder, GEMINI_RELAY_ASK_TIMEOUT="0.3") as client:
        with anyio.fail_after(10):
            await client.call_tool("gemini-ask", {"prompt": "clean up"})
        recorder.release.set()
    assert relay.backend.answers == [Answer(AskOutcome.TIMED_OUT)]


async def test_a_background_job_has_no_caller_to_ask(relay: InMemory) -> None:
    relay.backend.queue(Script(("Policy.",), ask=SHELL))
    recorder = Recorder(accept("proceed_once"))
    async with relay.asking_client(recorder, GEMINI_RELAY_TOOLSETS="jobs") as client:
        started = await client.call_tool("gemini-run", {"prompt": "clean up"})
        assert not started.is_error, text_of(started)
        data = started.structured_content or {}
        with anyio.fail_after(10):
            await client.call_tool("gemini-wait", {"jobId": data.get("jobId") or data["job_id"], "wait": 5})
    assert recorder.asked == []
    assert relay.backend.answers == [Answer(AskOutcome.NO_CALLER)]
