"""Gemini CLI exit codes and result events -> a classified RunFailed with an actionable message (pure)."""

from __future__ import annotations

import json
import re
import signal

from gemini_relay.backends.advice import BAD_RESPONSE, CUT_ADVICE, DOCTOR, api_status_advice, blocked_advice
from gemini_relay.core.vocabulary import FailureReason
from gemini_relay.errors import RunFailed
from gemini_relay.streams.transcript import Transcript

# In json/stream-json mode an API error exits with (HTTP status & 0xFF).
_HTTP_BY_RC = {status & 0xFF: status for status in (400, 401, 403, 404, 408, 409, 429, 500, 502, 503, 504)}
_QUOTA = re.compile(
    r"quota(?! *(?:exceeded )?on disk)|rate[ -]limit|resource[_ ]?exhausted|too many requests|\b429\b", re.IGNORECASE
)
_NOISE = re.compile(
    r"^(Ripgrep is not available|\[STARTUP\]|YOLO mode is enabled|Loaded cached credentials|"
    r"Both GOOGLE_API_KEY and GEMINI_API_KEY|Warning: 256-color support not detected|\s+at )"
)
# Marks the stderr line that says what went wrong; a tail often ends in a stack or an object dump (`}`).
_TELLING = re.compile(r"error|fail|exhausted|quota|invalid|denied|not found|must|cannot|unable|refused", re.I)
STDERR_DETAIL_CHARS = 600
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
# The CLI wraps API errors as `[API Error: <text>]`; after a 429 it adds its own advice for the terminal app ("…or
# switch to another /auth method"), which ACP does not send: dropped, so both paths word a failure alike.
_API_ERROR = "[API Error: "
AUTH_RECOVERY = f"gemini-doctor names the auth type the Gemini CLI picked and what it still needs; {DOCTOR}."
NETWORK = (
    "Retry; if it keeps failing, check the network, or GOOGLE_GEMINI_BASE_URL when it points the CLI at another "
    "endpoint (gemini-doctor checks that endpoint and the key)."
)
# The CLI's words for an answer body it could not read (what a proxy's error page or a broken gateway gets).
_GARBLED = ("incomplete json", "unexpected token", "is not valid json", "failed to parse")
# The CLI's words for a stream that ended before the model's finish reason (InvalidStreamError NO_FINISH_REASON).
_NO_FINISH = "without a finish reason"
# The CLI's words for an answer its stream check refused -> the finish reason (its bundle's InvalidStreamError texts).
_STOP_WORDS = (
    ("safety", "SAFETY"),
    ("recitation", "RECITATION"),
    ("other policy", "OTHER"),
    ("(other)", "OTHER"),
    ("token limit", "MAX_TOKENS"),
    ("malformed function call", "MALFORMED_FUNCTION_CALL"),
)


# The CLI's stream-json warning when its loop detection stopped the model (it asks once more, then gives up).
LOOP_DETECTED = "Loop detected, stopping execution"
MAX_SESSION_TURNS = (
    "The conversation reached the Gemini CLI's maximum session turns. Start a new conversation, or raise "
    "model.maxSessionTurns in the CLI's settings.json."
)


def no_answer_after_tools(names: list[str]) -> str:
    """The notice for a turn that ran tools and then ended with no text: the CLI takes an empty answer to a tool's
    result as the end of the turn (geminiChat: no NO_RESPONSE_TEXT check for a functionResponse turn), and what the
    tools did stands, so it is no failure; but the caller is told there is no answer to read."""
    ran = ", ".join(dict.fromkeys(names))
    return (
        f"Gemini ran its tools ({ran}) and ended the turn without writing an answer: what the tools did stands; "
        "ask in this conversation for a summary if you need one."
    )


def loop_failure(partial_text: str = "") -> RunFailed:
    """The CLI's loop detection stopped the model, twice: what came is a repetition, not an answer (cold: a
    stream-json warning; warm: stopReason max_turn_requests)."""
    return RunFailed(
        "The Gemini CLI stopped the answer: its loop detection found the model repeating itself",
        partial_text=partial_text,
        recovery=(
            "Rephrase the request or split it into smaller steps (the same prompt tends to loop again); to turn "
            "the check off, set model.disableLoopDetection to true in the Gemini CLI's settings.json."
        ),
    )


def classify_exit(
    returncode: int, record: Transcript, stderr: str, *, truncation: str | None = None
) -> RunFailed | None:
    """None when the run succeeded; otherwise the failure to raise. `truncation` says why stdout may have ended
    early (GeminiCliDecoder.truncation); it explains a missing final result."""
    finished = record.finished
    detail = _detail(record, stderr)
    if returncode == 0:
        if finished is None:
            return RunFailed(
                "gemini exited without a final result, so the answer may be incomplete"
                + (f": {truncation or detail}" if truncation or detail else ""),
                reason=FailureReason.BACKEND_ERROR,
            )
        if LOOP_DETECTED in record.stream_warnings + record.stream_errors:
            return loop_failure()
        if finished.ok:
            return None
        if record.text.strip() and _NO_FINISH in detail.lower():
            # Part of the answer came, then the stream ended: a cut answer, not an empty or blocked one.
            return RunFailed(f"Gemini returned no usable answer: {detail}", retryable=True, recovery=CUT_ADVICE)
        return RunFailed(
            f"Gemini returned no usable answer: {detail or 'the model sent an empty or blocked response'}",
            reason=_reason(detail),
            recovery=blocked_advice(_stop_reason(detail)),
        )
    match returncode:
        case 41:
            return auth_failure(detail)
        case 42:
            if "already exists" in detail:
                # Only a fresh run names its session (--session-id): a clash is a fluke, and a retry picks a new id.
                return RunFailed(f"The Gemini CLI refused the new session id: {detail}", retryable=True)
            return RunFailed(
                f"Unknown conversationId {record.spec.conversation_id or ''}".rstrip()
                + ": the Gemini CLI has no such saved session for this project. Omit conversationId to start a new "
                "conversation, or pick one from gemini-conversations.",
            )
        case 53:
            return RunFailed(MAX_SESSION_TURNS)
        case 55:
            return RunFailed(
                f"The Gemini CLI does not trust the folder {record.spec.cwd}. Trust it once by running `gemini` there, "
                "or set GEMINI_CLI_TRUST_WORKSPACE=true in the server's env.",
            )
    status = _HTTP_BY_RC.get(returncode)
    if status is not None:
        return api_error(status, detail)
    if returncode == 1:
        return generic_failure(detail or "exit 1 with no error output")
    if returncode > 128:
        return RunFailed(
            f"gemini was killed by signal {_signal_name(returncode - 128)}" + (f": {detail}" if detail else ""),
            reason=FailureReason.BACKEND_ERROR,
        )
    return RunFailed(f"gemini exited {returncode}" + (f": {detail}" if detail else " (no error output)"))


def auth_failure(detail: str) -> RunFailed:
    """The CLI refused to start for its auth (cold: exit 41; warm: -32000). The backend replaces the recovery with
    the precise fix when it can read the CLI's settings (auth.auth_fix)."""
    return RunFailed(
        "Gemini CLI authentication failed" + (f": {detail.rstrip('.:')}" if detail else ""),
        recovery=AUTH_RECOVERY,
    )


def _stop_reason(detail: str) -> str | None:
    """The finish reason behind the CLI's words for an invalid stream (its SAFETY_BLOCKED_MESSAGE, …)."""
    lowered = detail.lower()
    for words, reason in _STOP_WORDS:
        if words in lowered:
            return reason
    return None


def api_error(status: int, detail: str) -> RunFailed:
    """An error answer of the API with its HTTP status (cold: the exit code says it; warm: the JSON-RPC code)."""
    failure = _api_error(status, detail or "no details")
    failure.http_status = status
    return failure


def _api_error(status: int, text: str) -> RunFailed:
    advice = api_status_advice(status, "", text)
    if status == 429:
        return RunFailed(
            f"Gemini API quota or rate limit exhausted (HTTP 429): {text}",
            reason=FailureReason.QUOTA_EXHAUSTED,
            retryable="daily" not in text.lower() and "PerDay" not in text,
            recovery=advice,
        )
    if status in (500, 502, 503, 504):
        label = "is overloaded or unavailable" if status in (502, 503, 504) else "had an internal error"
        return RunFailed(f"The Gemini API {label} (HTTP {status}): {text}", retryable=True, recovery=advice)
    if status in (401, 403):
        return RunFailed(f"The Gemini API refused the credentials (HTTP {status}): {text}", recovery=advice)
    if status == 404:
        return RunFailed(
            f"Model not found (HTTP 404): {text.rstrip('.')}. See gemini-models for the ids this backend accepts."
        )
    return RunFailed(f"The Gemini API rejected the request (HTTP {status}): {text}", recovery=advice)


def generic_failure(detail: str) -> RunFailed:
    """A failure the CLI reports without an HTTP status (cold: exit 1; warm: the CLI's fallback code 500)."""
    lowered = detail.lower()
    if "not found" in lowered and "model" in lowered or "modelnotfound" in lowered:
        return RunFailed(f"Model not found: {detail.rstrip('.')}. See gemini-models for the ids this backend accepts.")
    if "fetch failed" in lowered or "econnrefused" in lowered or "terminated" in lowered:
        return RunFailed(f"Network error talking to the Gemini API: {detail}", retryable=True, recovery=NETWORK)
    garbled = any(words in lowered for words in _GARBLED)
    return RunFailed(f"gemini failed: {detail}", reason=_reason(detail), recovery=BAD_RESPONSE if garbled else None)


def _reason(detail: str) -> FailureReason:
    return FailureReason.QUOTA_EXHAUSTED if _QUOTA.search(detail) else FailureReason.BACKEND_ERROR


def _detail(record: Transcript, stderr: str) -> str:
    """The most specific error text: the result's error, then a stream error event, then stderr's own words."""
    finished = record.finished
    if finished is not None and finished.error:
        return clean_detail(finished.error)
    if record.stream_errors:
        return clean_detail(record.stream_errors[-1])
    lines = [ln.rstrip() for ln in _ANSI.sub("", stderr).splitlines() if ln.strip() and not _NOISE.match(ln)]
    for line in reversed(lines):
        if _TELLING.search(line):
            return clean_detail(line)[:STDERR_DETAIL_CHARS]
    return clean_detail(lines[-1])[:STDERR_DETAIL_CHARS] if lines else ""


def _signal_name(number: int) -> str:
    try:
        return f"{number} ({signal.Signals(number).name})"
    except ValueError:
        return str(number)


def clean_detail(text: str) -> str:
    """`[API Error: {"error":{"message":"X"}}]` -> `X`; colour codes, the CLI's wrapper and its advice removed."""
    text = _ANSI.sub("", text).strip()
    if text.startswith(_API_ERROR):
        inner, sep, _advice = text[len(_API_ERROR) :].partition("]\n")
        text = (inner if sep else inner.removesuffix("]")).strip()
    if text.startswith("{"):
        try:
            body = json.loads(text.partition("\n")[0])
        except ValueError:
            return text
        error = body.get("error") if isinstance(body, dict) else None
        message = error.get("message") if isinstance(error, dict) else None
        if isinstance(message, str):
            return message.strip()
    return text
