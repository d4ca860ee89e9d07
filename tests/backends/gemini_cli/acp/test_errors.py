"""ACP error answers become the same classified failures as the cold path's, capacity included."""

from __future__ import annotations

from gemini_relay.backends.capacity import capacity_of
from gemini_relay.backends.gemini_cli.acp.errors import prompt_failure, session_failure
from gemini_relay.backends.gemini_cli.acp.wire import AcpRpcError
from gemini_relay.core.vocabulary import FailureReason
from gemini_relay.errors import RunFailed


def test_a_quota_error_is_classified_as_capacity_with_its_http_status() -> None:
    failure = prompt_failure(AcpRpcError(429, "You have exhausted your daily quota on this model."))
    assert failure.reason is FailureReason.QUOTA_EXHAUSTED
    assert failure.http_status == 429 and failure.retryable is False
    found = capacity_of(failure)
    assert found is not None and found.status_code == 429


def test_an_overloaded_model_is_a_retryable_service_unavailable() -> None:
    failure = prompt_failure(AcpRpcError(503, "The model is overloaded. Please try again later."))
    found = capacity_of(failure)
    assert failure.retryable is True and failure.http_status == 503
    assert found is not None and found.kind == "service_unavailable"


def test_a_bad_request_is_not_capacity() -> None:
    failure = prompt_failure(AcpRpcError(400, "Request contains an invalid argument."))
    assert capacity_of(failure) is None and failure.http_status == 400


def test_an_unknown_conversation_names_the_id_and_the_way_out() -> None:
    error = AcpRpcError(-32603, "Internal error", {"details": 'Invalid session identifier "nope".'})
    failure = session_failure(error, "nope")
    assert "Unknown conversationId nope" in str(failure) and "gemini-conversations" in str(failure)


def test_a_missing_key_is_an_authentication_failure() -> None:
    failure = session_failure(AcpRpcError(-32000, "Gemini API key is missing or not configured."), None)
    assert isinstance(failure, RunFailed) and "authentication failed" in failure.message
    assert failure.recovery is not None and "gemini-doctor" in failure.recovery


def test_a_raw_api_error_body_is_reduced_to_the_apis_message_like_the_cold_path() -> None:
    body = '{"error":{"code":500,"message":"An internal error has occurred.","status":"INTERNAL"}}'
    failure = prompt_failure(AcpRpcError(500, body))
    assert failure.message == "The Gemini API had an internal error (HTTP 500): An internal error has occurred."


def test_a_500_without_the_apis_error_body_is_the_clis_own_fallback_classified_as_cold_classifies_exit_1() -> None:
    not_found = "models/gemini-9 is not found for API version v1beta, or is not supported for generateContent."
    model = prompt_failure(AcpRpcError(500, not_found))
    assert model.message.startswith("Model not found: models/gemini-9 is not found") and model.retryable is None
    malformed = prompt_failure(AcpRpcError(500, "Incomplete JSON segment at the end"))
    assert malformed.message == "gemini failed: Incomplete JSON segment at the end"
    assert malformed.retryable is None and malformed.http_status is None and capacity_of(malformed) is None
