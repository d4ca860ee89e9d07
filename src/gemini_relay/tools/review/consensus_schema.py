"""gemini-consensus's outputSchema: the answers (with who stood in for whom), the synthesis call, the findings tagged
by who raised them, the disagreements, a review's verdict and the panel; a dryRun (dry_run: true) has estimates
instead, and an async start (state) the member jobs."""

from __future__ import annotations

from typing import Any

from gemini_relay.core.vocabulary import Agreement, Severity, Verdict
from gemini_relay.tools.common.output_schemas import USAGE, reply_schema

_STR = {"type": "string"}
_STRS = {"type": "array", "items": _STR}
_INT = {"type": "integer", "minimum": 0}
_NUMBER_OR_NULL = {"type": ["number", "null"]}
_PANEL_CALL = {
    "type": "object",
    "properties": {
        "label": _STR,
        "model": _STR,
        "backend": _STR,
        "stance": {"enum": ["for", "against", "neutral", None]},
        "ok": {"type": "boolean"},
        "text": _STR,
        "error": _STR,
        "seconds": {"type": "number"},
        "usage": USAGE,
        "estimated_usd": _NUMBER_OR_NULL,
        "input_tokens": _INT,
        "token_method": _STR,
        "job_id": _STR,
        "stands_in_for": {**_STR, "description": "The label of the failed model this fallback model answered for."},
    },
    "required": ["label", "model", "backend", "stance"],
}
_FINDING = {
    "type": "object",
    "properties": {
        "text": _STR,
        "found_by": {**_STRS, "description": "The labels of the models whose answer raised it."},
        "agreement": {"enum": [a.value for a in Agreement]},
        "severity": {"enum": [s.value for s in Severity]},
    },
    "required": ["text", "found_by", "agreement"],
}
_DISAGREEMENT = {
    "type": "object",
    "properties": {
        "topic": _STR,
        "positions": {
            "type": "array",
            "items": {"type": "object", "properties": {"position": _STR, "held_by": _STRS}},
        },
    },
    "required": ["topic", "positions"],
}
_PANEL = {
    "type": "object",
    "properties": {
        "answered": _STRS,
        "replaced": {
            "type": "array",
            "items": {"type": "object", "properties": {"missing": _STR, "stood_in": _STR}},
        },
        "missing": {**_STRS, "description": "Models that failed with no fallback model answering for them."},
    },
    "required": ["answered", "replaced", "missing"],
}
CONSENSUS: dict[str, Any] = reply_schema(
    {
        "answers": {"type": "array", "items": _PANEL_CALL},
        "synthesis": _PANEL_CALL,
        "tagged": {"type": "boolean", "description": "false: the synthesis was unusable; nothing is tagged."},
        "untagged_because": _STR,
        "findings": {"type": "array", "items": _FINDING},
        "disagreements": {"type": "array", "items": _DISAGREEMENT},
        "recommendation": {"type": ["string", "null"]},
        "review": {"type": "boolean"},
        "verdict": {"enum": [*(v.value for v in Verdict), None]},
        "panel": _PANEL,
        "synthesis_replaced": {
            "type": "array",
            "items": {"type": "object", "properties": {"model": _STR, "backend": _STR, "error": _STR}},
            "description": "Synthesis calls that failed, in order, before the one in `synthesis`.",
        },
        "failed": _STRS,
        "usage": USAGE,
        "estimated_usd": _NUMBER_OR_NULL,
        "unpriced_calls": _INT,
        "rate_card": {"type": "object", "properties": {"as_of": _STR, "source": _STR}},
        "dry_run": {"type": "boolean"},
        "input_tokens": _INT,
        "token_method": _STR,
        "state": _STR,
        "idempotency_key": _STR,
        "note": _STR,
        "next": _STR,
    },
    ["answers"],
)
