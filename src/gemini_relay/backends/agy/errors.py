"""agy's exit code, result payload and stderr -> a classified RunFailed, plus the notices a finished run carries.

Pure (agy.md §3-§5). On exit 0 the payload outranks the exit code, but two stderr signals still change the verdict:
the background-task abort (a "success" that is only narration) and the print-timeout notice (the text is partial,
which is a notice, not a failure). The AGY_ERROR line adds retryable / error_id; project and region are redacted from
every message because agy's short_error leaks them (#205).
"""

from __future__ import annotations

import json
import re
import signal
from collections.abc import Sequence
from dataclasses import dataclass

from gemini_relay.backends.advice import api_status_advice, blocked_advice
from gemini_relay.core.vocabulary import FailureReason
from gemini_relay.errors import RunCancelled, RunFailed
from gemini_relay.streams.transcript import Transcript

STDERR_SCAN_BYTES = 2000  # agy-mcp reads AGY_ERROR only from this much of the tail
DETAIL_LINES = 40  # stderr lines quoted in a message; enough for "Available models: ..." refusals
_AGY_ERROR_PREFIX = "AGY_ERROR: "
_STATUS = re.compile(r"^([A-Z][A-Z_]*) \(code (\d+)\):")
_ERROR_ID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")
_QUOTA = re.compile(r"(?<!disk )quota|rate[ -]limit|http 429|resource[ _]?exhausted|too many requests", re.IGNORECASE)
_RESET = re.compile(r"\bresets? (?:in (?:\d+(?:\.\d+)?(?:ms|[dhms]))+|at \d[\w:+.-]*\d)", re.IGNORECASE)
_PROJECT_PATH = re.compile(r"projects/[^/\s`'\"]+")
_LOCATION_PATH = re.compile(r"locations/[^/\s`'\"]+")
_REGION = re.compile(
    r"\b(?:us|europe|asia|australia|northamerica|southamerica|me|africa)-[a-z]+\d+(?:-[a-z])?\b", re.IGNORECASE
)
_PROJECT_WORD = re.compile(
    r"((?<![a-z])project(?:[ _-]?(?:id|number))?\s*[:=]?\s*[`'\"]?)"
    r"(?:(?=[a-z0-9-]*[\d-])[a-z][a-z0-9-]{4,28}[a-z0-9]|\d{6,})\b",
    re.IGNORECASE,
)
_ERROR_PREFIX = re.compile(r"^(?:error|fatal):\s*", re.IGNORECASE)
_NOISE = re.compile(r"^(?:Fetching available models|MCP: \d+ server\(s\) still connecting)", re.IGNORECASE)
_FLAG_ERROR = re.compile(
    r"flag provided but not defined|flag needs an argument|invalid value .* for flag|unknown (?:shorthand )?flag"
)
_TIMEOUT_IN_BAND = "timeout waiting for response"  # agy before 1.1.28 reported its print-timeout in band
_SIGNED_OUT = re.compile(
    r"not (?:signed|logged) in|sign[- ]?in (?:is )?required|login required|unauthenticated|please (?:sign|log) in",
    re.IGNORECASE,
)
_UNKNOWN_MODEL = re.compile(r"invalid model|unknown model|model .*not (?:found|supported)|available models:", re.I)
_SAFETY = re.compile(r"safety|blocked by (?:the )?(?:content )?(?:policy|filter)", re.IGNORECASE)

SIGN_IN = (
    "When agy is not signed in, run `agy` once in a terminal as the user the server runs as (or set USE_ADC=1 for "
    "Application Default Credentials)."
)
PRINT_TIMEOUT_NOTICE = (
    "agy's --print-timeout expired with the turn still in progress, so agy returned only the partial output it had."
)
NO_RESULT_NOTICE = "agy exited without its final result; the text is what it streamed and may be incomplete."
_STATUS_NOTICE = "agy ended the turn with status {status}; the answer may be incomplete."
_PARTIAL_PREFIXES = (PRINT_TIMEOUT_NOTICE, NO_RESULT_NOTICE, _STATUS_NOTICE.split("{", 1)[0])


@dataclass(frozen=True)
class AgyErrorLine:
    """The last `AGY_ERROR: {...}` line (agy 1.2.6+)."""

    short_error: str
    status: str | None
    code: int | None
    retryable: bool | None
    error_id: str | None

    @property
    def label(self) -> str:
        """`NOT_FOUND (code 404)`: the part of short_error that can never leak a project or region."""
        if self.status is None:
            return "agy error"
        return f"{self.status} (code {self.code})" if self.code is not None else self.status


def parse_agy_error(stderr: str) -> AgyErrorLine | None:
    """Only the last line starting exactly `AGY_ERROR: ` in the last 2000 bytes counts; no fallback to earlier."""
    lines = _scan_tail(stderr).splitlines()
    last = next((ln.rstrip("\r") for ln in reversed(lines) if ln.startswith(_AGY_ERROR_PREFIX)), None)
    if last is None:
        return None
    try:
        value = json.loads(last[len(_AGY_ERROR_PREFIX) :])
    except ValueError:
        return None
    if not isinstance(value, dict):
        return None
    short = value.get("short_error")
    short_error = short if isinstance(short, str) else ""
    status_match = _STATUS.match(short_error)
    status: str | None = status_match.group(1) if status_match else None
    code: int | None = int(status_match.group(2)) if status_match else None
    raw_status = value.get("status")
    if status is None and isinstance(raw_status, str) and re.fullmatch(r"[A-Z][A-Z_]*", raw_status):
        status = raw_status
    raw_code = value.get("error_code")
    if code is None and isinstance(raw_code, int) and not isinstance(raw_code, bool):
        code = raw_code
    retryable = value.get("retryable")
    error_id = value.get("error_id")
    return AgyErrorLine(
        short_error=short_error,
        status=status,
        code=code,
        retryable=retryable if isinstance(retryable, bool) else None,
        error_id=error_id if isinstance(error_id, str) and _ERROR_ID.match(error_id) else None,
    )


def redact(text: str) -> str:
    """Remove cloud project and region names (agy's short_error names `projects/<p>/locations/<r>/...`)."""
    text = _PROJECT_PATH.sub("projects/<project>", text)
    text = _LOCATION_PATH.sub("locations/<region>", text)
    text = _PROJECT_WORD.sub(lambda m: m.group(1) + "<project>", text)
    return _REGION.sub("<region>", text)


def is_quota(text: str) -> bool:
    return bool(_QUOTA.search(text))


def background_aborted(stderr: str) -> bool:
    """Both lines are required: a kill line alone is a stray leaked task, not an aborted answer (#176)."""
    lines = [ln.lower() for ln in stderr.splitlines()]
    idle = any("idle" in ln and "background task" in ln for ln in lines)
    killed = any("terminating" in ln and "background task" in ln and "on exit" in ln for ln in lines)
    return idle and killed


def print_timed_out(stderr: str) -> bool:
    return any(
        "print timeout" in ln and "turn in progress" in ln and "partial output" in ln
        for ln in (line.lower() for line in stderr.splitlines())
    )


def run_notices(record: Transcript, stderr: str, returncode: int) -> list[str]:
    """The ⚠️ notices a run earns whatever its verdict: partial text, a non-SUCCESS status, denied actions."""
    notices: list[str] = []
    finished = record.finished
    if print_timed_out(stderr):
        notices.append(PRINT_TIMEOUT_NOTICE)
    if returncode == 0 and finished is None and record.streamed_text.strip():
        notices.append(NO_RESULT_NOTICE)
    if finished is not None and finished.status not in ("SUCCESS", "ERROR", "") and record.text.strip():
        notices.append(_STATUS_NOTICE.format(status=finished.status))
    if record.denied_actions:
        notices.append(
            f"agy denied {len(record.denied_actions)} action(s): {', '.join(record.denied_actions)}. "
            "Pass skipPermissions to let agy run them."
        )
    return notices


def is_partial(notices: Sequence[str]) -> bool:
    """Whether the run's text is incomplete (print-timeout, no result, an unusual status), read from its notices."""
    return any(n.startswith(_PARTIAL_PREFIXES) for n in notices)


def classify_exit(returncode: int, record: Transcript, stderr: str, *, schema_run: bool) -> RunFailed | None:
    """None when the run succeeded (possibly partially; see run_notices); otherwise the failure to raise."""
    if returncode == 0:
        return _clean_exit(record, stderr, schema_run=schema_run)
    match returncode:
        case 124:
            return RunFailed("agy exceeded its timeout and was terminated (exit 124)", reason=FailureReason.TIMEOUT)
        case 127:
            detail = _detail(record, stderr)
            return RunFailed(
                "agy exited 127: the agy binary could not be executed (check AGY_CLI_PATH), or agy itself exited 127"
                + (f"; stderr: {detail}" if detail else ""),
                reason=FailureReason.SPAWN_FAILED,
            )
        case 130 | 143:
            name = "SIGINT" if returncode == 130 else "SIGTERM"
            return RunCancelled(f"agy was stopped by {name} (exit {returncode}) from outside the relay")
        case 2:
            # Go prints the offending flag first, then its whole usage listing: quote the offence, not the listing.
            offence = [ln.strip() for ln in stderr.splitlines() if _FLAG_ERROR.search(ln)]
            detail = "\n".join(offence[-3:]) if offence else _detail(record, stderr)
            return RunFailed(
                "agy rejected its command line (exit 2); the installed agy may not accept a flag the relay sent"
                + (f":\n{detail}" if detail else "."),
            )
        case _ if returncode > 128:
            return RunFailed(f"agy was killed by {_signal_name(returncode - 128)} (exit {returncode})")
    lead = f"agy failed (exit {returncode})"
    return _failed(lead, record, stderr, no_detail=f"{lead} with no error output")


def _clean_exit(record: Transcript, stderr: str, *, schema_run: bool) -> RunFailed | None:
    finished = record.finished
    if background_aborted(stderr):
        conv = record.session_id
        return RunFailed(
            "agy went idle with outstanding background shell task(s) and terminated them at exit, so its response is "
            "only progress narration, not completed work. Re-run and have the agent run any verification in the "
            "foreground rather than as a background task"
            + (f", optionally continuing conversationId {conv}." if conv else "."),
            reason=FailureReason.BACKGROUND_ABORTED,
        )
    timed_out = print_timed_out(stderr)
    if finished is None:
        if schema_run:
            return RunFailed(
                "agy completed a json-schema run without a terminal structured_output"
                + (" (its --print-timeout expired)" if timed_out else ""),
                reason=FailureReason.TIMEOUT if timed_out else FailureReason.BACKEND_ERROR,
                recovery=_recovery(record, quota=False, retryable=None),
            )
        if record.streamed_text.strip():
            return None
        detail = _detail(record, stderr)
        return RunFailed(
            "agy exited 0 without a result or any answer text" + (f": {detail}" if detail else ""),
            recovery=_recovery(record, quota=False, retryable=None),
        )
    if finished.status == "SUCCESS":
        if schema_run and not finished.has_structured_output:
            if timed_out:
                return RunFailed(
                    "agy's --print-timeout expired before it produced the structured result for the jsonSchema run",
                    reason=FailureReason.TIMEOUT,
                )
            return RunFailed("agy reported SUCCESS for a json-schema run without structured_output")
        if not record.text.strip() and not finished.has_structured_output:
            # The other backends fail an empty answer the same way: a success with nothing in it helps no caller.
            # But agy usually says why it has nothing: that reason, and its fix, is the message.
            return _empty_success(record, stderr, timed_out=timed_out)
        return None
    if finished.status == "ERROR" or not finished.status:
        if not finished.status and not record.text.strip():
            return RunFailed("agy's result payload carried no status and no response")
        return _failed("agy reported an error", record, stderr, no_detail="agy reported an error without a message")
    if record.text.strip():
        return None  # an unusual status with an answer: kept, with a notice (run_notices)
    return RunFailed(f"agy reported status {finished.status} without an answer")


def _empty_success(record: Transcript, stderr: str, *, timed_out: bool) -> RunFailed:
    """agy's SUCCESS with no answer, with every reason agy gave for it: its print-timeout cut the turn, it was
    refused actions the task needed, or its own error text."""
    reasons: list[str] = []
    if timed_out:
        reasons.append(
            "agy's --print-timeout expired with the turn still in progress and no text yet; give the call more time "
            "(its timeout, or AGY_PRINT_TIMEOUT) or split the task"
        )
    if record.denied_actions:
        names = ", ".join(dict.fromkeys(record.denied_actions))
        reasons.append(
            f"agy was refused the action(s) the task needed ({names}); pass skipPermissions to let agy run them, or "
            "ask for an answer that needs no such action"
        )
    detail = _detail(record, stderr)
    if detail and not reasons:
        reasons.append(f"agy said: {detail}")
    message = "agy reported SUCCESS without any answer text" + (": " + "; ".join(reasons) if reasons else "")
    return RunFailed(
        message,
        reason=FailureReason.TIMEOUT if timed_out else FailureReason.BACKEND_ERROR,
        recovery=_recovery(record, quota=False, retryable=None),
    )


def _failed(lead: str, record: Transcript, stderr: str, *, no_detail: str) -> RunFailed:
    agy_error = parse_agy_error(stderr)
    detail = _detail(record, stderr)
    payload_error = record.finished.error if record.finished else None
    searched = " ".join(filter(None, [payload_error, _scan_tail(stderr)]))
    quota = is_quota(searched) or (agy_error is not None and is_quota(f"{agy_error.status} {agy_error.short_error}"))
    retryable = agy_error.retryable if agy_error else None
    reason = FailureReason.BACKEND_ERROR
    if quota:
        reason = FailureReason.QUOTA_EXHAUSTED
        message = f"agy's model quota or rate limit is exhausted: {detail or 'no details'}"
        reset = _RESET.search(searched)
        if reset and reset.group(0).lower() not in message.lower():
            message += f" ({reset.group(0)})"
    elif _TIMEOUT_IN_BAND in detail.lower():
        reason = FailureReason.TIMEOUT
        message = f"agy's --print-timeout expired before the model answered: {detail}"
    else:
        head = lead + (f" [{agy_error.label}]" if agy_error and agy_error.status else "")
        message = f"{head}: {detail}" if detail else no_detail
    advice = None if quota or reason is FailureReason.TIMEOUT else _advice(searched, agy_error)
    continuation = _recovery(record, quota=quota, retryable=retryable)
    return RunFailed(
        message,
        reason=reason,
        retryable=retryable,
        error_id=agy_error.error_id if agy_error else None,
        recovery=" ".join(filter(None, [advice, continuation])) or None,
    )


def _advice(searched: str, agy_error: AgyErrorLine | None) -> str | None:
    """The fix for a failure agy reported: signed out, an API error class (its AGY_ERROR status), a model it does not
    know, a safety block — worded as the other backends word them (backends/advice.py)."""
    if _SIGNED_OUT.search(searched) or (agy_error is not None and agy_error.status == "UNAUTHENTICATED"):
        return SIGN_IN.replace("When agy is not signed in, run", "agy is not signed in: run")
    if agy_error is not None and (agy_error.status or agy_error.code):
        advice = api_status_advice(agy_error.code, agy_error.status or "", agy_error.short_error)
        if advice is not None:
            return advice
    if _UNKNOWN_MODEL.search(searched):
        return "Pick a model id from gemini-models."
    if _SAFETY.search(searched):
        return blocked_advice("SAFETY")
    return None


def _detail(record: Transcript, stderr: str) -> str:
    """The payload's error first, then whatever else stderr says (agy's own refusals verbatim), redacted."""
    primary = (record.finished.error or "").strip() if record.finished else ""
    lines: list[str] = []
    for raw in stderr.splitlines()[-DETAIL_LINES * 4 :]:
        line = raw.rstrip("\r").rstrip()
        if not line.strip() or _NOISE.match(line) or print_timed_out(line):
            continue
        if line.startswith(_AGY_ERROR_PREFIX):
            parsed = parse_agy_error(line)
            said = _STATUS.sub("", parsed.short_error).strip() if parsed else ""
            if parsed is not None and not (primary and said and (said in primary or primary in said)):
                lines.append(f"AGY_ERROR: {parsed.short_error or parsed.label}")
            continue
        bare = _ERROR_PREFIX.sub("", line.strip())
        if primary and (bare == primary or bare in primary):
            continue
        lines.append(line)
    parts = ([primary] if primary else []) + lines[-DETAIL_LINES:]
    if not parts and _AGY_ERROR_PREFIX in stderr:
        return "<AGY_ERROR line withheld>"
    return redact("\n".join(parts))


def _recovery(record: Transcript, *, quota: bool, retryable: bool | None) -> str | None:
    if record.text.strip():
        return None
    conv = record.session_id
    if quota:
        if retryable is False:
            return (
                "agy marked this quota error as not retryable: waiting may not help. Check the account's plan, or "
                "choose another model (see gemini-models)."
            )
        return (
            "agy's model quota or rate limit is exhausted; the error message carries the reset time. This is "
            "transient, not a hard failure: wait for the reset, then retry"
            + (f" with conversationId {conv} to continue the thread without restating the task." if conv else ".")
        )
    if conv:
        return f"No result text was recovered. Pass conversationId {conv} to continue the thread without restating it."
    return None


def _scan_tail(stderr: str) -> str:
    data = stderr.encode("utf-8", errors="replace")
    if len(data) <= STDERR_SCAN_BYTES:
        return stderr
    tail = data[-STDERR_SCAN_BYTES:].decode("utf-8", errors="ignore")
    return tail.split("\n", 1)[1] if "\n" in tail else ""  # the first line is cut: drop it


def _signal_name(number: int) -> str:
    try:
        name = signal.Signals(number).name
    except ValueError:
        return f"signal {number}"
    return name + (" (possibly the out-of-memory killer)" if number == signal.SIGKILL else "")
