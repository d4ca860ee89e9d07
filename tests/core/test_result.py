"""RunResult and its codec: one value for a finished run, and a failure that keeps its kind across processes."""

from __future__ import annotations

import json

import pytest

from gemini_relay.core.events import Usage
from gemini_relay.core.receipt import Receipt
from gemini_relay.core.result import Failure, FailureKind, RunResult
from gemini_relay.core.vocabulary import FailureReason, RunState
from gemini_relay.errors import RunCancelled, RunFailed, RunTimedOut


def roundtrip(result: RunResult) -> RunResult:
    return RunResult.from_json(json.loads(json.dumps(result.to_json())))


def test_a_done_result_survives_its_json_form_unchanged() -> None:
    result = RunResult(
        state=RunState.DONE,
        text="answer",
        conversation_id="c-1",
        model="gemini-2.5-pro",
        usage=Usage(input_tokens=1, output_tokens=2, total_tokens=3),
        num_turns=1,
        notices=("n",),
        structured_output={"a": [1]},
        has_structured_output=True,
    )
    assert roundtrip(result) == result
    assert roundtrip(result).raise_for_failure() == result


def test_a_timeout_is_raised_again_as_a_timeout_with_its_seconds_and_partial_text() -> None:
    original = RunTimedOut("gemini", 30.0, partial_text="half")
    result = roundtrip(RunResult.from_error(original))
    with pytest.raises(RunTimedOut) as caught:
        result.raise_for_failure()
    assert caught.value.message == "gemini timed out after 30s"
    assert caught.value.seconds == 30.0 and caught.value.partial_text == "half"
    assert caught.value.reason is FailureReason.TIMEOUT


def test_a_cancel_is_raised_again_as_a_cancel() -> None:
    result = roundtrip(RunResult.from_error(RunCancelled("gemini-ask was cancelled", partial_text="x")))
    assert result.state is RunState.CANCELLED
    with pytest.raises(RunCancelled):
        result.raise_for_failure()


def test_a_failure_keeps_reason_http_status_retryable_error_id_and_recovery() -> None:
    error = RunFailed("429 quota", reason=FailureReason.QUOTA_EXHAUSTED, retryable=True, error_id="e-1",
                      recovery="wait", http_status=429)  # fmt: skip
    result = roundtrip(RunResult.from_error(error))
    assert result.failure == Failure(FailureKind.FAILED, "429 quota", FailureReason.QUOTA_EXHAUSTED, "wait", True,
                                     "e-1", 429)  # fmt: skip
    with pytest.raises(RunFailed) as caught:
        result.raise_for_failure()
    assert (caught.value.http_status, caught.value.reason) == (429, FailureReason.QUOTA_EXHAUSTED)


def test_an_unknown_reason_written_by_a_newer_version_reads_as_unknown() -> None:
    data = {**RunResult.from_error(RunFailed("x")).to_json(), "failure_reason": "solar_flare", "failure_kind": "zap"}
    result = RunResult.from_json(data)
    assert result.failure is not None
    assert (result.failure.reason, result.failure.kind) == (FailureReason.UNKNOWN, FailureKind.FAILED)


def test_a_receipt_travels_with_its_result_through_the_one_codec() -> None:
    receipt = Receipt(
        backend="gemini",
        run_id="abc123def456",
        job_id="abc123def456",
        model="gemini-2.5-flash",
        requested_model="gemini-2.5-pro",
        effort="high",
        conversation_id="c-1",
        partial=True,
        warm=True,
        queued_seconds=0.25,
        first_byte_seconds=0.5,
        total_seconds=1.25,
        tokens=Usage(input_tokens=10, output_tokens=5, total_tokens=15),
    )
    result = RunResult(state=RunState.DONE, text="answer", receipt=receipt)
    assert roundtrip(result).receipt == receipt
    assert roundtrip(RunResult(state=RunState.DONE, text="answer")).receipt is None


def test_a_run_that_answered_in_part_before_it_timed_out_keeps_its_receipt_across_the_codec() -> None:
    receipt = Receipt(backend="gemini", run_id="r1", job_id="r1", model="gemini-2.5-pro", finish_reason="TIMEOUT",
                      partial=True, first_byte_seconds=0.2, total_seconds=1.0)  # fmt: skip
    error = RunTimedOut("gemini", 1.0, partial_text="Finding 1")
    error.receipt = receipt
    result = RunResult.from_error(error)
    assert result.receipt == receipt
    with pytest.raises(RunTimedOut) as raised:
        roundtrip(result).raise_for_failure()
    assert raised.value.receipt == receipt and raised.value.partial_text == "Finding 1"
