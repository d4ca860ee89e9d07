"""The event contract, once, for every backend: the same upstream behaviour gives the same events, the same failure
class and reason, and the same notices — agy (fake), the Gemini CLI (cold), the Gemini API and warm ACP."""

from __future__ import annotations

import time
from contextlib import aclosing

import anyio
import pytest

from gemini_relay.backends.capacity import capacity_of
from gemini_relay.core.events import Finished, RunNotice, SessionStarted, TextDelta
from gemini_relay.core.vocabulary import FailureReason
from gemini_relay.errors import RunTimedOut
from tests.backends.conformance.adapters import STOP_BOUND, Adapter, Behaviour, open_run
from tests.backends.conformance.drive import BOUND, answer, drive, failure

pytestmark = pytest.mark.anyio
DEADLINE_SLACK = 5.0  # how late past its deadline a stalled run's timeout may land (the process group's stop)


@pytest.mark.behaviour(Behaviour.ANSWER)
async def test_a_run_names_its_conversation_first_streams_the_answer_and_finishes_once(upstream: Adapter) -> None:
    prompt, expected = upstream.answer("conformance answer 42")
    async with upstream.running() as backend:
        run = await answer(upstream, backend, upstream.spec(prompt))
    started = run.session()
    assert started.session_id
    first_delta = next(i for i, e in enumerate(run.events) if isinstance(e, TextDelta))
    assert run.events.index(started) < first_delta
    assert [isinstance(e, Finished) for e in run.events].count(True) == 1
    finished = run.finished
    assert finished.ok and finished.status == "SUCCESS"
    assert finished.usage is not None and finished.usage.output_tokens > 0
    assert run.text == expected
    assert finished.text in (None, expected)
    assert finished.session_id in (None, started.session_id)
    assert run.notices() == []  # nothing to say about a plain run


@pytest.mark.behaviour(Behaviour.UNICODE)
async def test_unicode_deltas_arrive_byte_for_byte(upstream: Adapter) -> None:
    async with upstream.running() as backend:
        run = await answer(upstream, backend, upstream.spec(upstream.prompt(Behaviour.UNICODE)))
    assert run.text.encode("utf-8") == upstream.unicode_text.encode("utf-8")


@pytest.mark.behaviour(Behaviour.CHUNKED)
async def test_an_answer_sent_in_pieces_arrives_as_several_deltas_in_order(upstream: Adapter) -> None:
    async with upstream.running() as backend:
        run = await answer(upstream, backend, upstream.spec(upstream.prompt(Behaviour.CHUNKED)))
    deltas = [e.text for e in run.events if isinstance(e, TextDelta)]
    assert len(deltas) > 1
    assert "".join(deltas) == upstream.chunked_text
    # agy's final `response` has its trailing newline trimmed (agy.md: result text); the deltas keep it.
    assert run.finished.text in (None, upstream.chunked_text, upstream.chunked_text.rstrip("\n"))


@pytest.mark.behaviour(Behaviour.QUOTA)
async def test_a_quota_error_fails_as_quota_exhausted_and_is_recognised_as_capacity(upstream: Adapter) -> None:
    async with upstream.running() as backend:
        error = await failure(upstream, backend, upstream.spec(upstream.prompt(Behaviour.QUOTA)))
    assert not isinstance(error, RunTimedOut)
    assert error.reason is FailureReason.QUOTA_EXHAUSTED, (error.reason, error.message)
    assert capacity_of(error) is not None, error.message


@pytest.mark.behaviour(Behaviour.SERVER_ERROR)
async def test_a_server_error_fails_as_a_backend_error_and_is_not_capacity(upstream: Adapter) -> None:
    async with upstream.running() as backend:
        error = await failure(upstream, backend, upstream.spec(upstream.prompt(Behaviour.SERVER_ERROR)))
    assert not isinstance(error, RunTimedOut)
    assert error.reason is FailureReason.BACKEND_ERROR, (error.reason, error.message)
    assert capacity_of(error) is None, error.message


@pytest.mark.behaviour(Behaviour.STALL)
async def test_a_hang_times_out_at_the_deadline_with_the_partial_text(upstream: Adapter) -> None:
    deadline = upstream.stall_deadline
    spec = upstream.spec(upstream.prompt(Behaviour.STALL), timeout_seconds=deadline)
    async with upstream.running() as backend:
        await upstream.warm_up(backend)  # a warm backend's deadline would otherwise hold its Node boot
        run = await drive(upstream, backend, spec)
    error = run.error
    assert isinstance(error, RunTimedOut), (type(error), error and error.message)
    assert error.reason is FailureReason.TIMEOUT
    assert deadline - 0.5 <= run.elapsed <= deadline + DEADLINE_SLACK, run.elapsed
    assert error.partial_text == upstream.stall_text
    assert capacity_of(error) is None


@pytest.mark.behaviour(Behaviour.STALL)
async def test_closing_the_run_mid_answer_stops_the_upstream(upstream: Adapter) -> None:
    spec = upstream.spec(upstream.prompt(Behaviour.STALL))
    async with upstream.running() as backend:
        with anyio.fail_after(BOUND):
            async with aclosing(open_run(backend, spec)) as events:
                async for event in events:
                    if isinstance(event, TextDelta):
                        break
        # Closing returns once the upstream is stopped: never left to the garbage collector of a nested stream.
        assert upstream.run_processes() == [], f"{upstream.name}: closing returned with the upstream running"
        closed = time.monotonic()
        await upstream.assert_stopped(backend)
        assert time.monotonic() - closed <= STOP_BOUND * 2


@pytest.mark.behaviour(Behaviour.EMPTY)
async def test_an_empty_answer_is_never_a_silent_success(upstream: Adapter) -> None:
    async with upstream.running() as backend:
        error = await failure(upstream, backend, upstream.spec(upstream.prompt(Behaviour.EMPTY)))
    assert error.reason is FailureReason.BACKEND_ERROR, (error.reason, error.message)
    assert error.message


@pytest.mark.behaviour(Behaviour.UNHONOURED)
async def test_an_explicit_option_the_backend_cannot_honour_is_a_notice_and_the_run_answers(
    upstream: Adapter,
) -> None:
    fields, word = upstream.unhonoured
    prompt, expected = upstream.answer("with an option")
    async with upstream.running() as backend:
        run = await answer(upstream, backend, upstream.spec(prompt, **fields))
    notices = [i for i, e in enumerate(run.events) if isinstance(e, RunNotice)]
    assert len(notices) == 1, run.notices()
    assert word in run.notices()[0]
    assert notices[0] < len(run.events) - 1  # before the terminal event
    assert run.text == expected and run.finished.ok


@pytest.mark.behaviour(Behaviour.HISTORY)
async def test_a_conversation_continues_by_its_id(upstream: Adapter) -> None:
    prompt = upstream.prompt(Behaviour.HISTORY)
    async with upstream.running() as backend:
        first = await answer(upstream, backend, upstream.spec(prompt))
        cid = first.session().session_id
        second = await answer(upstream, backend, upstream.spec(prompt, conversation_id=cid))
    assert upstream.turns_seen(first.events) == 1
    assert second.session().session_id == cid
    assert second.finished.session_id in (None, cid)
    assert upstream.turns_seen(second.events) == 2
    assert not any(isinstance(e, SessionStarted) and e.session_id != cid for e in second.events)
