"""The relay's reply conventions: notices, the response prefix, conversation and usage lines, failure text."""

from __future__ import annotations

from dataclasses import replace

from gemini_relay.core.events import Usage
from gemini_relay.core.receipt import Receipt
from gemini_relay.core.vocabulary import FailureReason
from gemini_relay.errors import RunCancelled, RunFailed, RunTimedOut
from gemini_relay.format import (
    NOTICE_MARKER,
    RESPONSE_PREFIX,
    THREAD_MARKER,
    failure_message,
    gemini_reply,
    receipt_line,
    thread_line,
    usage_line,
    with_notices,
)

USAGE = Usage(input_tokens=12, output_tokens=8, thinking_tokens=3, total_tokens=23)


def test_the_markers() -> None:
    assert (RESPONSE_PREFIX, THREAD_MARKER, NOTICE_MARKER) == ("Gemini response:", "🧵 conversationId:", "⚠️")


def test_without_notices_the_body_is_unchanged() -> None:
    assert with_notices([], "body") == "body"


def test_each_notice_is_a_warning_line_above_the_body() -> None:
    assert with_notices(["model x was ignored.", "effort high was ignored."], "body") == (
        "⚠️ model x was ignored.\n⚠️ effort high was ignored.\n\nbody"
    )


def test_repeated_notices_are_shown_once_in_first_seen_order() -> None:
    assert with_notices(iter(["b", "a", "b", "a"]), "x") == "⚠️ b\n⚠️ a\n\nx"


def test_the_thread_line_says_how_to_continue() -> None:
    assert thread_line("abc-123") == "🧵 conversationId: abc-123 (pass it back to continue this thread)"


def test_the_usage_line_counts_tokens() -> None:
    assert usage_line(USAGE) == "📊 [Tokens: 12 in, 8 out (3 thinking)]"
    assert usage_line(Usage()) == "📊 [Tokens: 0 in, 0 out (0 thinking)]"


def test_a_plain_reply_is_prefixed() -> None:
    assert gemini_reply("Hello") == "Gemini response:\nHello"


def test_a_full_reply_has_notices_then_prefix_text_thread_and_usage() -> None:
    assert gemini_reply("Hello", notices=["n1"], conversation_id="c1", usage=USAGE) == (
        "⚠️ n1\n\n"
        "Gemini response:\nHello\n\n"
        "🧵 conversationId: c1 (pass it back to continue this thread)\n\n"
        "📊 [Tokens: 12 in, 8 out (3 thinking)]"
    )


def test_an_unprefixed_reply_keeps_the_text_first() -> None:
    assert gemini_reply('{"a":1}', prefixed=False) == '{"a":1}'
    assert gemini_reply("t", prefixed=False, conversation_id="c").startswith("t\n\n🧵")


def test_an_empty_conversation_id_adds_no_thread_line() -> None:
    assert gemini_reply("t", conversation_id="") == "Gemini response:\nt"
    assert gemini_reply("t", conversation_id=None) == "Gemini response:\nt"


def test_zero_usage_is_still_shown_when_given() -> None:
    assert gemini_reply("t", usage=Usage()).endswith("📊 [Tokens: 0 in, 0 out (0 thinking)]")


def test_a_failure_is_its_message() -> None:
    assert failure_message(RunFailed("gemini failed: boom")) == "gemini failed: boom"


def test_a_failure_adds_its_recovery_hint_then_the_labelled_partial_answer() -> None:
    exc = RunFailed(
        "Gemini API quota or rate limit exhausted",
        reason=FailureReason.QUOTA_EXHAUSTED,
        partial_text="The first half",
        recovery="Wait a minute, then retry.",
    )
    assert failure_message(exc) == (
        "Gemini API quota or rate limit exhausted\n\n"
        "Wait a minute, then retry.\n\n"
        "[Partial response — the run did not finish]\nThe first half"
    )


def test_a_whitespace_only_partial_answer_is_not_shown() -> None:
    assert failure_message(RunFailed("x", partial_text="  \n ")) == "x"


def test_timeouts_and_cancellations_carry_their_partial_text() -> None:
    assert failure_message(RunTimedOut("gemini", 30, partial_text="so far")) == (
        "gemini timed out after 30s\n\n[Partial response — the run did not finish]\nso far"
    )
    assert failure_message(RunTimedOut("agy", 1.5)) == "agy timed out after 1.5s"
    assert failure_message(RunCancelled("gemini-ask was cancelled by gemini-cancel", partial_text="p")).startswith(
        "gemini-ask was cancelled by gemini-cancel\n\n[Partial response"
    )


RUN = Receipt(backend="gemini", run_id="0123456789ab", job_id="0123456789ab", model="gemini-2.5-pro", warm=True,
              total_seconds=1.23, tokens=USAGE)  # fmt: skip


def test_the_receipt_line_names_model_backend_warmth_time_tokens_and_job() -> None:
    assert receipt_line([RUN]) == "— gemini-2.5-pro via gemini (warm) · 1.2 s · 23 tokens · job 0123456789ab"


def test_the_receipt_line_says_the_model_asked_for_when_another_served_and_a_partial_answer() -> None:
    fell_back = replace(RUN, model="gemini-2.5-flash", requested_model="gemini-2.5-pro", warm=False, partial=True)
    assert receipt_line([fell_back]) == (
        "— gemini-2.5-flash (asked gemini-2.5-pro) via gemini (cold) · 1.2 s · 23 tokens · partial · job 0123456789ab"
    )


def test_a_run_without_a_process_or_a_job_says_neither() -> None:
    api = replace(RUN, backend="api", warm=None, job_id=None, tokens=None)
    assert receipt_line([api]) == "— gemini-2.5-pro via api · 1.2 s · run 0123456789ab"


def test_several_runs_share_one_line() -> None:
    other = replace(RUN, model="gemini-2.5-flash", job_id="ba9876543210")
    assert receipt_line([RUN, other]) == (
        "— 2 runs: gemini-2.5-pro, gemini-2.5-flash via gemini · 46 tokens · jobs 0123456789ab, ba9876543210"
    )
