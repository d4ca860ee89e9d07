"""Capacity failures — 429, RESOURCE_EXHAUSTED, quota, 503, UNAVAILABLE — told apart from every other failure.

The model fallback retries only these, and a deep review reports them instead of retrying. Structured fields win:
when the text carries a JSON error object with a code or status, that alone decides; otherwise the wording does.
Pure: no I/O.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from typing import Any, Literal

from gemini_relay.core.vocabulary import FailureReason
from gemini_relay.errors import RunCancelled, RunFailed, RunTimedOut

__all__ = ["CapacityFailure", "CapacityKind", "capacity_of", "classify_capacity"]

CapacityKind = Literal["rate_limit", "quota", "resource_exhausted", "service_unavailable"]
MESSAGE_CHARS = 240  # a capacity message is quoted in notices and _meta; one line is enough
_JSON_SCAN_LIMIT = 20  # `{` positions tried when the JSON object is embedded in prose

# The UNAVAILABLE status token is matched in capitals only: the word "unavailable" alone is too common.
_UNAVAILABLE = re.compile(r"\b503\b|service unavailable|(?-i:\bUNAVAILABLE\b)|overloaded", re.IGNORECASE)
_EXHAUSTED = re.compile(r"resource[_ ]?exhausted", re.IGNORECASE)
# `quota`, except a disk quota (EDQUOT on a full home directory is not a model limit).
_QUOTA = re.compile(r"(?<!disk )quota(?! *(?:exceeded )?on disk)", re.IGNORECASE)
_RATE = re.compile(r"rate[ -]limit|too many requests|\b429\b", re.IGNORECASE)
_STATUS_429 = re.compile(r"\b429\b")


@dataclass(frozen=True)
class CapacityFailure:
    """What ran out: `kind`, the HTTP status when known, the upstream's message (one line) and its retry verdict."""

    kind: CapacityKind
    status_code: int | None
    message: str
    retryable: bool | None = None

    def describe(self) -> str:
        code = f", HTTP {self.status_code}" if self.status_code else ""
        return f"{self.kind.replace('_', ' ')}{code}"

    def as_meta(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "statusCode": self.status_code,
            "message": self.message,
            "retryable": self.retryable,
        }


def capacity_of(exc: RunFailed) -> CapacityFailure | None:
    """The capacity failure behind a failed run, or None (a timeout or cancel never is one)."""
    if isinstance(exc, RunTimedOut | RunCancelled) or exc.reason in (FailureReason.TIMEOUT, None):
        return None
    found = classify_capacity(exc.message)
    if found is None and exc.reason is FailureReason.QUOTA_EXHAUSTED:
        found = CapacityFailure("quota", None, _one_line(exc.message))
    if found is None:
        return None
    return replace(found, retryable=exc.retryable)


def classify_capacity(text: str) -> CapacityFailure | None:
    """Classify an error text: a JSON error's `code`/`status` decide when present, else the wording."""
    cleaned = text.strip()
    if not cleaned:
        return None
    error = _json_error(cleaned)
    if error is not None:
        return _from_fields(error, cleaned)
    return _from_wording(cleaned)


def _from_fields(error: dict[str, Any], text: str) -> CapacityFailure | None:
    code = str(error.get("code", error.get("error_code", ""))).upper()
    status = str(error.get("status", "")).upper()
    raw_message = error.get("message") or error.get("short_error") or text
    message = _one_line(str(raw_message))
    if "503" in (code, status) or status == "UNAVAILABLE":
        return CapacityFailure("service_unavailable", 503, message)
    if "RESOURCE_EXHAUSTED" in (code, status):
        return CapacityFailure("resource_exhausted", 429 if code == "429" else None, message)
    if "QUOTA_EXCEEDED" in (code, status):
        return CapacityFailure("quota", 429 if code == "429" else None, message)
    if "429" in (code, status):
        return CapacityFailure("rate_limit", 429, message)
    return None


def _from_wording(text: str) -> CapacityFailure | None:
    message = _one_line(text)
    code = 429 if _STATUS_429.search(text) else None
    if _UNAVAILABLE.search(text):
        return CapacityFailure("service_unavailable", 503, message)
    if _EXHAUSTED.search(text):
        return CapacityFailure("resource_exhausted", code, message)
    if _QUOTA.search(text):
        return CapacityFailure("quota", code, message)
    if _RATE.search(text):
        return CapacityFailure("rate_limit", 429, message)
    return None


def _json_error(text: str) -> dict[str, Any] | None:
    """The first JSON object in `text` that has error fields (`{"error": {...}}` or a bare code/status object)."""
    decoder = json.JSONDecoder()
    start = text.find("{")
    for _ in range(_JSON_SCAN_LIMIT):
        if start < 0:
            return None
        try:
            value, _end = decoder.raw_decode(text, start)
        except ValueError:
            value = None
        if isinstance(value, dict):
            inner = value.get("error")  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
            candidate: Any = inner if isinstance(inner, dict) else value
            if any(key in candidate for key in ("code", "status", "error_code")):
                return candidate  # type: ignore[no-any-return]
        start = text.find("{", start + 1)
    return None


def _one_line(text: str) -> str:
    single = " ".join(text.split())
    return single if len(single) <= MESSAGE_CHARS else single[: MESSAGE_CHARS - 1] + "…"
