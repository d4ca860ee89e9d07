"""agy failure classification: every stderr signal of agy.md §3 and every exit code of §4, with §5's precedence."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gemini_relay.backends.agy.errors import (
    NO_RESULT_NOTICE,
    PRINT_TIMEOUT_NOTICE,
    background_aborted,
    classify_exit,
    is_partial,
    is_quota,
    parse_agy_error,
    print_timed_out,
    redact,
    run_notices,
)
from gemini_relay.core.events import Finished, SessionStarted, TextDelta
from gemini_relay.core.spec import RunSpec
from gemini_relay.core.vocabulary import BackendName, FailureReason
from gemini_relay.errors import RunCancelled, RunFailed
from gemini_relay.jobs.engine.record import RunRecord

CID = "11111111-2222-3333-4444-555555555555"
ERROR_ID = "0b6f3c1e-7d2a-4f8e-9a51-3c2d1e0f9a8b-1"
LOCATION_LINE = (
    "Selected model is not supported in the selected location. For a full list of available locations and deployment "
    "endpoints, please refer to Antigravity documentation at https://antigravity.google/docs/enterprise."
)
SHORT_404 = (
    "NOT_FOUND (code 404): Publisher model `projects/my-proj-123/locations/us-central1/publishers/google/models/"
    "gemini-3.1-pro-preview` was not found or your project does not have access to it. Ensure you are using a valid "
    "model name and that the model is available in the specified region."
)
QUOTA_LINE = "Individual quota reached. Please upgrade your subscription to increase your limits. Resets in 3h46m46s."
QUOTA_AGY_ERROR = {
    "short_error": f"RESOURCE_EXHAUSTED (code 429): {QUOTA_LINE}",
    "status": "RESOURCE_EXHAUSTED",
    "error_code": 429,
    "code_kind": "http",
    "retryable": True,
    "error_id": ERROR_ID,
}
IDLE_127 = "root agent idle; waiting up to 5s for 2 background task(s)"
IDLE_129 = "root agent idle; waiting up to 1m0s for 2 background task(s)"
KILL = "terminating 2 background task(s) on exit"
PRINT_TIMEOUT = "[agy] print timeout after 8s with turn in progress; returning partial output"


def agy_error(payload: object) -> str:
    return "AGY_ERROR: " + json.dumps(payload, separators=(",", ":"))


def record(
    *,
    status: str | None = None,
    response: str | None = None,
    error: str | None = None,
    streamed: str = "",
    conversation: str | None = CID,
    structured: bool = False,
    denied: tuple[str, ...] = (),
) -> RunRecord:
    rec = RunRecord(spec=RunSpec(tool="gemini-ask", prompt="p", cwd=Path("/tmp")), backend=BackendName("agy"))
    if conversation:
        rec.apply(SessionStarted(session_id=conversation))
    if streamed:
        rec.apply(TextDelta(text=streamed))
    if status is not None:
        rec.apply(
            Finished(
                ok=status == "SUCCESS",
                status=status,
                text=response,
                error=error,
                structured_output={"k": 1} if structured else None,
                has_structured_output=structured,
                denied_actions=denied,
                session_id=conversation,
            )
        )
    return rec


def failure(returncode: int, rec: RunRecord, stderr: str = "", *, schema_run: bool = False) -> RunFailed:
    result = classify_exit(returncode, rec, stderr, schema_run=schema_run)
    assert result is not None
    return result


# --- §3.1 the AGY_ERROR line -------------------------------------------------------------------------------------


def test_the_measured_region_failure_parses_status_retryable_and_error_id() -> None:
    stderr = f"error: {LOCATION_LINE}\n" + agy_error(
        {"short_error": SHORT_404, "retryable": False, "error_id": ERROR_ID}
    )
    parsed = parse_agy_error(stderr)
    assert parsed is not None
    assert (parsed.status, parsed.code, parsed.retryable, parsed.error_id) == ("NOT_FOUND", 404, False, ERROR_ID)
    assert parsed.label == "NOT_FOUND (code 404)"


def test_exit_3_is_a_backend_error_whose_message_names_the_model_but_not_the_project_or_region() -> None:
    stderr = f"Error: {LOCATION_LINE}\n" + agy_error(
        {"short_error": SHORT_404, "retryable": False, "error_id": ERROR_ID}
    )
    rec = record(status="ERROR", response="", error=LOCATION_LINE, conversation=None)
    result = failure(3, rec, stderr)
    assert result.reason is FailureReason.BACKEND_ERROR
    assert (result.retryable, result.error_id) == (False, ERROR_ID)
    assert "exit 3" in result.message and "NOT_FOUND (code 404)" in result.message
    assert LOCATION_LINE in result.message and "gemini-3.1-pro-preview" in result.message
    for leak in ("my-proj-123", "us-central1"):
        assert leak not in result.message
    assert result.message.count("Selected model is not supported") == 1  # payload error and stderr line 1 merged


def test_the_quota_sample_promotes_to_quota_exhausted_and_keeps_the_reset_text() -> None:
    stderr = f"error: {QUOTA_LINE}\n{agy_error(QUOTA_AGY_ERROR)}\n"
    result = failure(3, record(status="ERROR", response="", error=QUOTA_LINE), stderr)
    assert result.reason is FailureReason.QUOTA_EXHAUSTED
    assert "Resets in 3h46m46s" in result.message
    assert (result.retryable, result.error_id) == (True, ERROR_ID)
    assert result.recovery is not None and f"conversationId {CID}" in result.recovery
    assert "wait for the reset" in result.recovery


def test_a_quota_marked_not_retryable_says_waiting_may_not_help() -> None:
    stderr = agy_error({**QUOTA_AGY_ERROR, "retryable": False})
    result = failure(3, record(status="ERROR", response="", error=QUOTA_LINE), stderr)
    assert result.reason is FailureReason.QUOTA_EXHAUSTED and result.retryable is False
    assert result.recovery is not None and "not retryable" in result.recovery


@pytest.mark.parametrize(
    "line",
    [
        ' AGY_ERROR: {"short_error":"X (code 1): y","retryable":true}',
        'agy_error: {"short_error":"X (code 1): y","retryable":true}',
        'AGY_ERROR: {"short_error":"X (code 1): y"',
        'AGY_ERROR: {"short_error":"X (code 1): y"} trailing',
        "AGY_ERROR: null",
        "AGY_ERROR: [1,2]",
        'AGY_ERROR: "NOT_FOUND"',
    ],
)
def test_indented_lowercase_cut_trailing_and_non_object_lines_are_rejected(line: str) -> None:
    assert parse_agy_error(line) is None


def test_a_string_retryable_is_unknown_rather_than_trusted() -> None:
    parsed = parse_agy_error(agy_error({"short_error": "UNAVAILABLE (code 503): x", "retryable": "true"}))
    assert parsed is not None and parsed.retryable is None and parsed.status == "UNAVAILABLE"


def test_the_last_line_wins_without_falling_back_to_an_earlier_one() -> None:
    good = agy_error({"short_error": "NOT_FOUND (code 404): x", "retryable": False})
    assert parse_agy_error(f"{good}\nAGY_ERROR: {{broken") is None
    later = agy_error({"short_error": "UNAVAILABLE (code 503): y", "retryable": True})
    parsed = parse_agy_error(f"{good}\n{later}\n")
    assert parsed is not None and parsed.status == "UNAVAILABLE"


def test_crlf_line_endings_parse() -> None:
    parsed = parse_agy_error("error: x\r\n" + agy_error({"short_error": "NOT_FOUND (code 404): x"}) + "\r\n")
    assert parsed is not None and parsed.status == "NOT_FOUND"


@pytest.mark.parametrize("bad_id", ["has space", "a/b", "x" * 129, "<uuid>-1"])
def test_an_error_id_outside_the_safe_alphabet_is_dropped(bad_id: str) -> None:
    parsed = parse_agy_error(agy_error({"short_error": "NOT_FOUND (code 404): x", "error_id": bad_id}))
    assert parsed is not None and parsed.error_id is None


def test_only_the_last_2000_bytes_are_searched_and_a_cut_first_line_is_dropped() -> None:
    line = agy_error({"short_error": "NOT_FOUND (code 404): x", "retryable": False})
    assert parse_agy_error(line + "\n" + "n" * 2100) is None
    padded = "x" * 1990 + "\n" + line  # the cut starts inside the padding line: the AGY_ERROR line survives whole
    assert parse_agy_error(padded) is not None


def test_agy_error_is_not_applied_to_a_success_payload() -> None:
    stderr = agy_error({"short_error": "NOT_FOUND (code 404): x", "retryable": False})
    assert classify_exit(0, record(status="SUCCESS", response="fine"), stderr, schema_run=False) is None


def test_an_unparseable_agy_error_line_is_withheld_from_the_message() -> None:
    result = failure(3, record(conversation=None), "AGY_ERROR: {not json projects/p-1/locations/us-east1")
    assert "<AGY_ERROR line withheld>" in result.message
    assert "us-east1" not in result.message


@pytest.mark.parametrize(
    ("text", "hidden"),
    [
        ("projects/my-proj-123/locations/us-central1/publishers", ("my-proj-123", "us-central1")),
        ("project my-proj-123 in region europe-west4", ("my-proj-123", "europe-west4")),
        ("projects/123456789012/locations/global", ("123456789012",)),
        ("GOOGLE_CLOUD_PROJECT=gen-lang-client-0123456789", ("0123456789",)),
    ],
)
def test_redaction_removes_project_and_region_names(text: str, hidden: tuple[str, ...]) -> None:
    shown = redact(text)
    for secret in hidden:
        assert secret not in shown


def test_redaction_keeps_ordinary_prose() -> None:
    text = "your project does not have access to it in the selected location"
    assert redact(text) == text


# --- §3.2 background-task abort ----------------------------------------------------------------------------------


@pytest.mark.parametrize("idle", [IDLE_127, IDLE_129, IDLE_129.upper()])
def test_both_background_lines_turn_a_success_into_background_aborted(idle: str) -> None:
    rec = record(status="SUCCESS", response="I started the checks in the background.")
    result = failure(0, rec, f"{idle}\n{KILL}\n")
    assert result.reason is FailureReason.BACKGROUND_ABORTED
    assert "foreground" in result.message and f"conversationId {CID}" in result.message
    assert result.recovery is None


def test_a_kill_line_alone_is_a_stray_task_and_the_run_stays_done() -> None:
    assert classify_exit(0, record(status="SUCCESS", response="done"), KILL, schema_run=False) is None
    assert not background_aborted(KILL)


def test_background_abort_outranks_a_schema_run_without_structured_output_and_a_missing_payload() -> None:
    stderr = f"{IDLE_129}\n{KILL}"
    assert failure(0, record(status="SUCCESS", response="x"), stderr, schema_run=True).reason is (
        FailureReason.BACKGROUND_ABORTED
    )
    assert failure(0, record(streamed="narration"), stderr).reason is FailureReason.BACKGROUND_ABORTED


def test_background_markers_must_each_sit_within_one_line() -> None:
    assert not background_aborted(
        "root agent idle;\nwaiting for 2 background\ntask(s)\nterminating 2 background task(s)"
    )


# --- §3.3 print-timeout expiry -----------------------------------------------------------------------------------


def test_a_print_timeout_success_is_kept_with_a_partial_notice() -> None:
    rec = record(status="SUCCESS", response="Partial analysis", streamed="Partial analysis")
    assert classify_exit(0, rec, PRINT_TIMEOUT, schema_run=False) is None
    for notice in run_notices(rec, PRINT_TIMEOUT, 0):
        rec.note(notice)
    assert rec.notices == [PRINT_TIMEOUT_NOTICE] and is_partial(rec.notices)


def test_the_print_timeout_matcher_ignores_the_duration_and_needs_all_three_phrases() -> None:
    assert print_timed_out("[agy] PRINT TIMEOUT after 29m59s with turn in progress; returning partial output")
    assert not print_timed_out("[agy] print timeout after 8s with turn in progress")


def test_a_schema_run_cut_by_the_print_timeout_fails_as_a_timeout() -> None:
    result = failure(0, record(status="SUCCESS", response=""), PRINT_TIMEOUT, schema_run=True)
    assert result.reason is FailureReason.TIMEOUT


def test_the_pre_1_1_28_in_band_timeout_is_a_timeout() -> None:
    result = failure(0, record(status="ERROR", response="", error="timeout waiting for response", conversation=None))
    assert result.reason is FailureReason.TIMEOUT
    assert "timeout waiting for response" in result.message


def test_a_clean_success_is_not_partial() -> None:
    rec = record(status="SUCCESS", response="all done")
    assert classify_exit(0, rec, "", schema_run=False) is None
    assert run_notices(rec, "", 0) == [] and not is_partial(rec.notices)


# --- §3.4 quota and rate-limit wording ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        QUOTA_LINE,
        "Individual quota reached. Contact your administrator to enable overages. Resets in 164h27m24s.",
        "Error: 429 Too Many Requests: rate limit exceeded",
        "rate-limit hit",
        "HTTP 429",
        "RESOURCE_EXHAUSTED",
        "resource exhausted",
        "ResourceExhausted",
    ],
)
def test_quota_and_rate_limit_wording_is_recognised(text: str) -> None:
    assert is_quota(text)


def test_disk_quota_is_not_a_model_quota() -> None:
    assert not is_quota("write failed: disk quota exceeded")


def test_a_rate_limit_on_stderr_with_exit_1_is_quota_exhausted() -> None:
    result = failure(1, record(), "Error: 429 Too Many Requests: rate limit exceeded")
    assert result.reason is FailureReason.QUOTA_EXHAUSTED and "429 Too Many Requests" in result.message


def test_a_quota_error_payload_at_exit_0_is_quota_exhausted_with_the_reset_text() -> None:
    result = failure(0, record(status="ERROR", response="", error="Individual quota reached. Resets in 21m50s."))
    assert result.reason is FailureReason.QUOTA_EXHAUSTED and "Resets in 21m50s" in result.message


# --- §4 exit codes -----------------------------------------------------------------------------------------------


def test_exit_0_with_success_succeeds() -> None:
    assert classify_exit(0, record(status="SUCCESS", response="hi"), "", schema_run=False) is None


def test_exit_1_passes_agys_own_refusal_through_verbatim() -> None:
    refusal = (
        'Error: invalid model selection "gemini-9": "gemini-9" is not recognized as a known model. '
        "Available models: gemini-3.8-flash-high, gemini-3.1-pro-high, claude-sonnet-4-6"
    )
    result = failure(1, record(conversation=None), f"{refusal}\n")
    assert refusal in result.message and result.reason is FailureReason.BACKEND_ERROR


def test_exit_2_says_agy_rejected_its_command_line() -> None:
    result = failure(2, record(conversation=None), "flag provided but not defined: -input-format\nUsage of agy:")
    assert "rejected its command line" in result.message and "-input-format" in result.message


def test_exit_124_is_a_timeout() -> None:
    assert failure(124, record()).reason is FailureReason.TIMEOUT


def test_exit_127_is_spawn_failed_with_the_stderr_tail() -> None:
    result = failure(127, record(conversation=None), "agy: error while loading shared libraries")
    assert result.reason is FailureReason.SPAWN_FAILED and "shared libraries" in result.message


@pytest.mark.parametrize(("code", "name"), [(130, "SIGINT"), (143, "SIGTERM")])
def test_sigint_and_sigterm_read_as_a_cancel(code: int, name: str) -> None:
    result = failure(code, record())
    assert isinstance(result, RunCancelled) and result.reason is None and name in result.message


@pytest.mark.parametrize(("code", "name"), [(137, "SIGKILL"), (139, "SIGSEGV")])
def test_other_signal_deaths_name_the_signal(code: int, name: str) -> None:
    result = failure(code, record())
    assert result.reason is FailureReason.BACKEND_ERROR and name in result.message


def test_a_non_zero_exit_without_output_says_so() -> None:
    assert failure(5, record(conversation=None)).message == "agy failed (exit 5) with no error output"


def test_the_exit_code_table_noise_lines_are_not_quoted() -> None:
    result = failure(1, record(conversation=None), "Fetching available models...\nError: boom")
    assert "Fetching" not in result.message and "Error: boom" in result.message


# --- §5 payload precedence and recovery ---------------------------------------------------------------------------


def test_an_error_payload_without_a_message_says_so() -> None:
    assert failure(0, record(status="ERROR", response="")).message == "agy reported an error without a message"


def test_a_payload_without_status_or_response_fails() -> None:
    assert "no status and no response" in failure(0, record(status="", response="")).message


def test_an_unrecognized_status_with_an_answer_is_kept_with_a_notice() -> None:
    rec = record(status="MAX_TURNS", response="so far")
    assert classify_exit(0, rec, "", schema_run=False) is None
    notices = run_notices(rec, "", 0)
    assert notices == ["agy ended the turn with status MAX_TURNS; the answer may be incomplete."]


def test_an_unrecognized_status_without_an_answer_fails() -> None:
    assert "status CANCELLED without an answer" in failure(0, record(status="CANCELLED", response="")).message


def test_a_clean_exit_without_a_result_keeps_streamed_text_as_partial() -> None:
    rec = record(streamed="half")
    assert classify_exit(0, rec, "", schema_run=False) is None
    assert run_notices(rec, "", 0) == [NO_RESULT_NOTICE]


def test_a_clean_exit_without_a_result_or_text_fails_with_a_recovery_hint() -> None:
    result = failure(0, record())
    assert "without a result" in result.message
    assert result.recovery is not None and CID in result.recovery


def test_a_schema_success_without_structured_output_fails_closed() -> None:
    result = failure(0, record(status="SUCCESS", response="{}"), schema_run=True)
    assert result.message == "agy reported SUCCESS for a json-schema run without structured_output"


def test_a_schema_success_with_structured_output_succeeds() -> None:
    assert classify_exit(0, record(status="SUCCESS", response="", structured=True), "", schema_run=True) is None


def test_a_schema_run_without_any_payload_fails() -> None:
    assert "without a terminal structured_output" in failure(0, record(streamed="x"), schema_run=True).message


def test_recovery_is_offered_only_when_no_text_was_recovered() -> None:
    assert failure(1, record(streamed="partial answer"), "Error: boom").recovery is None
    empty = failure(1, record(), "Error: boom").recovery
    assert empty is not None and f"conversationId {CID}" in empty


def test_denied_actions_become_a_notice() -> None:
    rec = record(status="SUCCESS", response="ok", denied=("run_command",))
    assert any("agy denied 1 action(s): run_command" in n for n in run_notices(rec, "", 0))


def test_the_reset_text_is_kept_even_when_only_stderr_carries_it() -> None:
    rec = record(status="ERROR", response="", error="Individual quota reached.")
    result = failure(3, rec, agy_error(QUOTA_AGY_ERROR))
    assert result.message.endswith("(Resets in 3h46m46s)")
    assert result.message.count("Individual quota reached") == 1


def test_exit_2_quotes_the_offending_flag_rather_than_the_whole_usage_listing() -> None:
    usage = "\n".join(f"  -flag{i} string\n    \tdescription {i}" for i in range(60))
    result = failure(
        2, record(conversation=None), f"flag provided but not defined: -input-format\nUsage of agy:\n{usage}"
    )
    assert "flag provided but not defined: -input-format" in result.message and "-flag59" not in result.message
