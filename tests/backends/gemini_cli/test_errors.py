"""classify_exit against gemini-cli.md §6, fed the real 0.61.0 stream lines and stderr from tests/data/streams."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gemini_relay.backends.gemini_cli.decoder import GeminiCliDecoder
from gemini_relay.backends.gemini_cli.errors import classify_exit
from gemini_relay.core.spec import RunSpec
from gemini_relay.core.vocabulary import BackendName, FailureReason
from gemini_relay.errors import RunFailed
from gemini_relay.jobs.engine.record import RunRecord

DATA = Path(__file__).resolve().parents[2] / "data" / "streams"
INDEX: dict[str, Any] = json.loads((DATA / "gemini-cli-0.61.0-index.json").read_text(encoding="utf-8"))
CWD = Path("/work/proj")


def record_for(stdout: bytes = b"", conversation_id: str | None = None) -> RunRecord:
    record = RunRecord(
        spec=RunSpec(tool="gemini-ask", prompt="p", cwd=CWD, conversation_id=conversation_id),
        backend=BackendName("gemini"),
    )
    decoder = GeminiCliDecoder()
    for event in decoder.push(stdout) + decoder.flush():
        record.apply(event)
    return record


def stdout_of(scenario: str) -> bytes:
    name = INDEX[scenario]["stdout_file"]
    return (DATA / name).read_bytes() if name else b""


def stderr_of(scenario: str) -> str:
    entry = INDEX[scenario]
    return str(entry["stderr_tail"])


def classify(scenario: str, *, conversation_id: str | None = None) -> RunFailed | None:
    """The recorded scenario as the backend sees it: its exit code, its stdout events, its stderr tail."""
    entry = INDEX[scenario]
    record = record_for(stdout_of(scenario), conversation_id)
    return classify_exit(int(entry["exit_code"]), record, stderr_of(scenario))


def failure(scenario: str, *, conversation_id: str | None = None) -> RunFailed:
    result = classify(scenario, conversation_id=conversation_id)
    assert result is not None
    assert "\x1b" not in result.message
    assert "[API Error:" not in result.message
    return result


# --- rc 0 -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "scenario", ["echo", "tool_call", "thought", "unicode", "json", "session_id", "resume_history"]
)
def test_a_successful_run_is_no_failure(scenario: str) -> None:
    assert INDEX[scenario]["exit_code"] == 0
    assert classify(scenario) is None


def test_an_empty_answer_exits_0_but_is_a_failure_with_the_clis_explanation() -> None:
    exc = failure("empty")
    assert exc.message == (
        "Gemini returned no usable answer: The model returned an empty response with no text or thoughts. "
        "This may be a transient API issue; please try again."
    )
    assert exc.reason is FailureReason.BACKEND_ERROR


def test_a_safety_block_exits_0_but_is_a_failure() -> None:
    exc = failure("safety")
    assert exc.message == "Gemini returned no usable answer: The model response was blocked due to safety settings."
    assert exc.reason is FailureReason.BACKEND_ERROR


def test_a_failed_result_without_any_explanation_still_says_what_happened() -> None:
    record = record_for(b'{"type":"init","session_id":"s"}\n{"type":"result","status":"error"}\n')
    exc = classify_exit(0, record, "")
    assert exc is not None
    assert exc.message == "Gemini returned no usable answer: the model sent an empty or blocked response"


def test_exit_0_without_a_result_event_is_a_failure_because_a_killed_run_exits_0() -> None:
    data = stdout_of("echo")
    killed = data[: data.index(b'{"type":"result"')]
    record = record_for(killed)
    exc = classify_exit(0, record, stderr_of("echo"))
    assert exc is not None
    assert exc.message == "gemini exited without a final result, so the answer may be incomplete"
    assert exc.reason is FailureReason.BACKEND_ERROR
    assert record.text == "Hello from fake Gemini! You said: say hi"


def test_exit_0_without_a_result_quotes_a_real_stderr_error() -> None:
    exc = classify_exit(
        0, record_for(), "Ripgrep is not available. Falling back to GrepTool.\nError: lost the socket\n"
    )
    assert exc is not None
    assert (
        exc.message == "gemini exited without a final result, so the answer may be incomplete: Error: lost the socket"
    )


# --- rc 1 -----------------------------------------------------------------------------------------------------


def test_a_404_exits_1_and_is_model_not_found_with_a_pointer_to_gemini_models() -> None:
    exc = failure("error_404")
    assert exc.message == (
        "Model not found: models/gemini-2.5-pro is not found for API version v1beta, or is not supported for "
        "generateContent. Call ListModels to see the list of available models and their supported methods. "
        "See gemini-models for the ids this backend accepts."
    )
    assert exc.reason is FailureReason.BACKEND_ERROR
    assert not exc.retryable


def test_a_404_found_only_on_stderr_is_still_model_not_found() -> None:
    exc = classify_exit(
        1, record_for(), "\n".join(INDEX["error_404"]["stderr_key_lines"]) + "\n" + stderr_of("error_404")
    )
    assert exc is not None
    assert exc.message.startswith("Model not found: ")
    assert "models/gemini-2.5-pro is not found" in exc.message


@pytest.mark.parametrize(
    ("scenario", "said"),
    [
        ("hang_then_stop", "exception TypeError: fetch failed sending request"),
        ("stall_then_stop", "terminated"),
    ],
)
def test_network_failures_exit_1_and_are_retryable(scenario: str, said: str) -> None:
    exc = failure(scenario)
    assert exc.message == f"Network error talking to the Gemini API: {said}"
    assert exc.retryable is True


def test_a_stalled_run_keeps_its_partial_answer_on_the_record() -> None:
    assert record_for(stdout_of("stall_then_stop")).text == "Partial answer before the stall"


def test_connection_refused_is_a_network_error() -> None:
    exc = classify_exit(1, record_for(), "Error: connect ECONNREFUSED 127.0.0.1:443\n")
    assert exc is not None
    assert exc.message.startswith("Network error talking to the Gemini API: ")
    assert exc.retryable is True


def test_an_api_error_in_text_exits_1_with_its_text() -> None:
    exc = failure("nonjson")
    assert exc.message == "gemini failed: Incomplete JSON segment at the end"
    assert exc.reason is FailureReason.BACKEND_ERROR


def test_an_api_error_only_on_stderr_quotes_the_error_line_not_the_stack() -> None:
    exc = classify_exit(1, record_for(), stderr_of("nonjson"))
    assert exc is not None
    assert exc.message.startswith("gemini failed: ")
    assert exc.message.endswith("Error: Incomplete JSON segment at the end")
    assert "    at " not in exc.message


def test_a_quota_message_with_exit_1_is_classified_as_quota() -> None:
    exc = classify_exit(1, record_for(), "Error: You exceeded your current quota\n")
    assert exc is not None
    assert exc.reason is FailureReason.QUOTA_EXHAUSTED


def test_exit_1_with_no_output_at_all_says_so() -> None:
    exc = classify_exit(1, record_for(), "")
    assert exc is not None
    assert exc.message == "gemini failed: exit 1 with no error output"


# --- 41 / 42 / 53 / 55 ----------------------------------------------------------------------------------------


def test_41_is_an_authentication_failure_quoting_the_cli_and_pointing_at_the_doctor() -> None:
    exc = failure("missing_api_key")
    assert exc.message.startswith("Gemini CLI authentication failed")
    assert "you must specify the GEMINI_API_KEY environment variable" in exc.message
    assert "Update your environment" not in exc.message
    # The backend puts the precise fix here (auth.with_auth_fix); a bare classification names where to find it.
    assert exc.recovery is not None and exc.recovery.startswith("gemini-doctor names the auth type")


def test_41_for_an_invalid_auth_method() -> None:
    exc = classify_exit(41, record_for(), "Invalid auth method selected.\n")
    assert exc is not None
    assert "Invalid auth method selected" in exc.message


@pytest.mark.parametrize("scenario", ["resume_unknown", "resume_unknown_with_sessions"])
def test_42_for_an_unknown_session_names_the_conversation_id_and_the_way_out(scenario: str) -> None:
    conversation_id = INDEX[scenario]["argv_flags"][3]
    exc = failure(scenario, conversation_id=conversation_id)
    assert exc.message.startswith(f"Unknown conversationId {conversation_id}: ")
    assert "gemini-conversations" in exc.message
    assert "Omit conversationId" in exc.message


def test_42_for_an_existing_session_id_is_not_reported_as_an_unknown_conversation() -> None:
    exc = failure("session_id_existing")
    assert "Unknown conversationId" not in exc.message
    assert "already exists" in exc.message
    assert exc.retryable is True


def test_53_is_the_session_turn_limit_with_its_fix() -> None:
    line = (
        '{"type":"result","status":"error","error":{"type":"FatalTurnLimitedError","message":"Reached max session '
        'turns for this session. Increase the number of turns by specifying maxSessionTurns in settings.json."}}\n'
    )
    exc = classify_exit(53, record_for(line.encode()), "")
    assert exc is not None
    assert exc.message == (
        "The conversation reached the Gemini CLI's maximum session turns. Start a new conversation, or raise "
        "model.maxSessionTurns in the CLI's settings.json."
    )


def test_55_is_an_untrusted_folder_naming_the_folder_and_the_fix() -> None:
    exc = failure("untrusted_folder")
    assert str(CWD) in exc.message
    assert "GEMINI_CLI_TRUST_WORKSPACE=true" in exc.message


# --- HTTP status & 0xFF ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("scenario", "rc", "start", "said", "retryable"),
    [
        (
            "error_400",
            144,
            "The Gemini API rejected the request (HTTP 400): ",
            "Request contains an invalid argument.",
            None,
        ),
        (
            "error_403",
            147,
            "The Gemini API refused the credentials (HTTP 403): ",
            "Method doesn't allow unregistered callers",
            None,
        ),
        (
            "error_500",
            244,
            "The Gemini API had an internal error (HTTP 500): ",
            "An internal error has occurred.",
            True,
        ),
        (
            "error_503",
            247,
            "The Gemini API is overloaded or unavailable (HTTP 503): ",
            "The model is overloaded. Please try again later.",
            True,
        ),
    ],
)
def test_api_errors_exit_with_the_http_status_low_byte(
    scenario: str, rc: int, start: str, said: str, retryable: bool | None
) -> None:
    assert INDEX[scenario]["exit_code"] == rc
    exc = failure(scenario)
    assert exc.message.startswith(start + said)
    assert '{"error"' not in exc.message
    assert exc.retryable is retryable
    assert exc.reason is FailureReason.BACKEND_ERROR


@pytest.mark.parametrize("scenario", ["quota", "quota_retry"])
def test_a_rate_limit_is_quota_exhausted_and_retryable(scenario: str) -> None:
    assert INDEX[scenario]["exit_code"] == 173
    exc = failure(scenario)
    assert exc.message.startswith(
        "Gemini API quota or rate limit exhausted (HTTP 429): You exceeded your current quota, please check your "
        "plan and billing details."
    )
    assert exc.reason is FailureReason.QUOTA_EXHAUSTED
    assert exc.retryable is True


def test_a_suggested_retry_delay_is_kept_in_the_message() -> None:
    assert "Suggested retry after 1s." in failure("quota_retry").message


@pytest.mark.parametrize("scenario", ["quota", "quota_retry", "quota_daily"])
def test_the_clis_terminal_advice_after_a_429_is_dropped_as_warm_never_gets_it(scenario: str) -> None:
    exc = failure(scenario)
    assert "/auth method" not in exc.message and "AI Studio" not in exc.message
    assert exc.http_status == 429


def test_a_daily_quota_is_quota_exhausted_and_not_retryable() -> None:
    exc = failure("quota_daily")
    assert exc.message.startswith(
        "Gemini API quota or rate limit exhausted (HTTP 429): You have exhausted your daily quota on this model."
    )
    assert exc.reason is FailureReason.QUOTA_EXHAUSTED
    assert exc.retryable is False


def test_a_per_day_quota_id_on_stderr_is_not_retryable() -> None:
    exc = classify_exit(
        173, record_for(), 'Error: quota exceeded: quotaId "GenerateRequestsPerDayPerProjectPerModel"\n'
    )
    assert exc is not None
    assert exc.reason is FailureReason.QUOTA_EXHAUSTED
    assert exc.retryable is False


@pytest.mark.parametrize(("rc", "status"), [(145, 401), (148, 404), (152, 408), (246, 502), (248, 504)])
def test_other_http_statuses_are_named(rc: int, status: int) -> None:
    exc = classify_exit(rc, record_for(), "")
    assert exc is not None
    assert f"(HTTP {status})" in exc.message
    assert ".." not in exc.message


# --- signals and the rest -------------------------------------------------------------------------------------


@pytest.mark.parametrize(("rc", "name"), [(137, "SIGKILL"), (143, "SIGTERM"), (139, "SIGSEGV"), (134, "SIGABRT")])
def test_a_death_by_signal_names_the_signal(rc: int, name: str) -> None:
    exc = classify_exit(rc, record_for(), "")
    assert exc is not None
    assert exc.message == f"gemini was killed by signal {rc - 128} ({name})"
    assert exc.reason is FailureReason.BACKEND_ERROR


def test_an_unexpected_exit_code_is_reported_with_the_stderr_detail() -> None:
    exc = classify_exit(7, record_for(), "Error: something odd\n")
    assert exc is not None
    assert exc.message == "gemini exited 7: Error: something odd"
    assert classify_exit(7, record_for(), "") is not None


def test_stderr_noise_is_never_quoted_as_the_detail() -> None:
    noise = stderr_of("tool_call")
    exc = classify_exit(9, record_for(), noise)
    assert exc is not None
    assert exc.message == "gemini exited 9 (no error output)"


def test_a_stderr_tail_ending_in_an_object_dump_quotes_the_telling_line_not_a_brace() -> None:
    exc = classify_exit(3, record_for(), stderr_of("quota"))
    assert exc is not None
    assert not exc.message.endswith("}")
    assert "You exceeded your current quota" in exc.message


def test_the_detail_from_a_long_stderr_line_is_bounded() -> None:
    exc = classify_exit(1, record_for(), "Error: " + "x" * 5000 + "\n")
    assert exc is not None
    assert len(exc.message) < 700


def test_a_missing_final_result_after_the_pipe_cut_says_the_output_was_cut() -> None:
    failure = classify_exit(0, record_for(b'{"type":"init","session_id":"s"}\n'), "", truncation="output was cut")
    assert failure is not None and failure.reason is FailureReason.BACKEND_ERROR
    assert failure.message == "gemini exited without a final result, so the answer may be incomplete: output was cut"
