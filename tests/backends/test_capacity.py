"""The capacity classifier: JSON error fields decide first, then the wording; timeouts and cancels never count."""

from __future__ import annotations

import pytest

from gemini_relay.backends.capacity import CapacityFailure, capacity_of, classify_capacity
from gemini_relay.core.vocabulary import FailureReason
from gemini_relay.errors import RunCancelled, RunFailed, RunTimedOut


@pytest.mark.parametrize(
    ("text", "kind", "status"),
    [
        ('{"error": {"code": 429, "message": "slow down", "status": "RESOURCE_EXHAUSTED"}}', "resource_exhausted", 429),
        ('{"error": {"code": 503, "message": "Overloaded.", "status": "UNAVAILABLE"}}', "service_unavailable", 503),
        ('{"error": {"code": 429, "message": "too fast"}}', "rate_limit", 429),
        ('{"error": {"status": "QUOTA_EXCEEDED", "message": "q"}}', "quota", None),
        (
            'error: Individual quota reached.\nAGY_ERROR: {"short_error":"RESOURCE_EXHAUSTED (code 429): Individual '
            'quota reached.","status":"RESOURCE_EXHAUSTED","error_code":429,"retryable":true}',
            "resource_exhausted",
            429,
        ),
    ],
)
def test_json_error_fields_classify_the_failure(text: str, kind: str, status: int | None) -> None:
    found = classify_capacity(text)
    assert found is not None and (found.kind, found.status_code) == (kind, status)


def test_json_fields_win_over_wording() -> None:
    assert classify_capacity('{"error": {"code": 400, "message": "quota field is invalid", "status": "X"}}') is None


@pytest.mark.parametrize(
    ("text", "kind", "status"),
    [
        ("The Gemini API is overloaded or unavailable (HTTP 503): overloaded.", "service_unavailable", 503),
        ("Service Unavailable", "service_unavailable", 503),
        ("status UNAVAILABLE from backend", "service_unavailable", 503),
        ("Gemini API quota or rate limit exhausted (HTTP 429): You exceeded your current quota", "quota", 429),
        ("grpc: RESOURCE_EXHAUSTED", "resource_exhausted", None),
        ("Individual quota reached. Resets in 3h46m46s.", "quota", None),
        ("Error: 429 Too Many Requests: rate limit exceeded", "rate_limit", 429),
        ("rate-limit hit", "rate_limit", 429),
    ],
)
def test_wording_classifies_the_failure_when_there_is_no_json(text: str, kind: str, status: int | None) -> None:
    found = classify_capacity(text)
    assert found is not None and (found.kind, found.status_code) == (kind, status)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "Model not found (HTTP 404): models/x is not found",
        "The Gemini API refused the credentials (HTTP 403)",
        "write failed: Disk quota exceeded",
        "the file is unavailable",
        "port 4290 refused",
    ],
)
def test_other_failures_are_not_capacity_failures(text: str) -> None:
    assert classify_capacity(text) is None


def test_a_run_failure_carries_its_retry_verdict_and_quota_reason() -> None:
    found = capacity_of(RunFailed("HTTP 503 overloaded", retryable=True))
    assert found == CapacityFailure("service_unavailable", 503, "HTTP 503 overloaded", True)
    by_reason = capacity_of(RunFailed("agy gave up", reason=FailureReason.QUOTA_EXHAUSTED, retryable=False))
    assert by_reason is not None and by_reason.kind == "quota" and by_reason.retryable is False


def test_timeouts_and_cancels_are_never_capacity_failures() -> None:
    assert capacity_of(RunTimedOut("gemini", 503)) is None
    assert capacity_of(RunCancelled("429 was cancelled")) is None


def test_long_messages_are_one_short_line() -> None:
    found = classify_capacity("429\n" + "x " * 500)
    assert found is not None and "\n" not in found.message and len(found.message) == 240


def test_the_meta_shape_is_camel_case() -> None:
    failure = CapacityFailure("rate_limit", 429, "m", True)
    assert failure.as_meta() == {"kind": "rate_limit", "statusCode": 429, "message": "m", "retryable": True}
    assert failure.describe() == "rate limit, HTTP 429"
