"""The `outputSchema` of each data tool and the `structuredContent` builders that satisfy them.

The text block stays in every reply, for people and for clients that read only text; structuredContent carries the
data — and, first, `text`: the reply as the calling model must see it (model_view.py says why; the server fills it).
Every schema here is built by `reply_schema`, which declares that field and the run's receipt, so no data tool can
leave them out. A declared schema obliges every successful answer to carry structured content, so the server adds it
(the text, the receipt) to a tool's reply that has no data of its own: every tool that runs a model declares one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from gemini_relay.core.events import Usage
from gemini_relay.core.receipt import Receipt
from gemini_relay.tools.common.model_view import TEXT

_STR = {"type": "string"}
_INT = {"type": "integer", "minimum": 0}
_STRS = {"type": "array", "items": _STR}
_NULLABLE_STR = {"type": ["string", "null"]}


USAGE: dict[str, Any] = {
    "type": "object",
    "properties": {
        "input_tokens": _INT,
        "output_tokens": _INT,
        "thinking_tokens": _INT,
        "cached_tokens": _INT,
        "total_tokens": _INT,
    },
    "required": ["input_tokens", "output_tokens"],
}
_NUMBER = {"type": "number"}
# The run an answer came from (core/receipt.py; docs/tools.md "Receipts"): declared once per schema in `$defs`, kept
# short since clients send schemas along with the tool list.
RECEIPT: dict[str, Any] = {
    "type": "object",
    "properties": {
        **dict.fromkeys(("backend", "run_id", "finish_reason"), _STR),
        **dict.fromkeys(("model", "requested_model", "effort", "job_id", "conversation_id"), _NULLABLE_STR),
        "partial": {"type": "boolean"},
        "warm": {"type": ["boolean", "null"]},
        "queued_seconds": _NUMBER,
        "first_byte_seconds": {"type": ["number", "null"]},
        "total_seconds": _NUMBER,
        "tokens": {"type": ["object", "null"]},  # the run's usage: USAGE's fields
    },
    "required": ["backend", "model", "run_id", "partial", "warm", "total_seconds"],
}
_RECEIPT_REF = {"$ref": "#/$defs/receipt"}


def reply_schema(properties: dict[str, Any], required: list[str], *, runs: bool = True) -> dict[str, Any]:
    """An object schema of `properties` with `text` first: the model's view of the reply (model_view.py); then, for
    a tool whose answer comes from runs (`runs`), the receipt of the run and of all of them when there were several
    (server/relay.py fills both)."""
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {"text": TEXT, **properties},
        "required": ["text", *required],
    }
    if runs:
        schema["properties"] |= {"receipt": _RECEIPT_REF, "receipts": {"items": _RECEIPT_REF}}
        schema["$defs"] = {"receipt": RECEIPT}
    return schema


def receipt_fields(receipts: Sequence[Receipt]) -> dict[str, Any]:
    """structuredContent's receipt fields: `receipt` (the run whose words the answer is: the last), and `receipts`
    (every run, in order) when there were several."""
    if not receipts:
        return {}
    fields: dict[str, Any] = {"receipt": receipts[-1].to_json()}
    if len(receipts) > 1:
        fields["receipts"] = [r.to_json() for r in receipts]
    return fields


_QUOTA_LEVEL = {"enum": ["ok", "low", "critical", "exhausted"]}
_QUOTA_GROUP: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": _STR,
        "level": _QUOTA_LEVEL,
        "remaining_percent": {"type": "integer", "minimum": 0, "maximum": 100},
        "window": _STR,
        "reset_time": _STR,
    },
    "required": ["name", "level", "remaining_percent", "window"],
}
# The compact reading on gemini-run / -status / -wait results: present only while the server holds a trusted one.
QUOTA_SUMMARY: dict[str, Any] = {
    "type": "object",
    "properties": {"checked_at": _STR, "groups": {"type": "array", "items": _QUOTA_GROUP}},
    "required": ["checked_at", "groups"],
}
_QUOTA_BUCKET: dict[str, Any] = {
    "type": "object",
    "properties": {
        **dict.fromkeys(("id", "name", "window", "reset_time"), _STR),
        "remaining_fraction": {"type": "number"},
        "refilled": {"type": "boolean"},
    },
    "required": ["id", "name", "window", "remaining_fraction", "refilled"],
}
# gemini-quota: every group with its windows; on a backend without a quota, no groups and a note saying so.
QUOTA_REPORT: dict[str, Any] = reply_schema(
    {
        "backend": _STR,
        "checked_at": _STR,
        "groups": {
            "type": "array",
            "items": {
                **_QUOTA_GROUP,
                "properties": {
                    **_QUOTA_GROUP["properties"],
                    "description": _STR,
                    "buckets": {"type": "array", "items": _QUOTA_BUCKET},
                },
                "required": [*_QUOTA_GROUP["required"], "buckets"],
            },
        },
        "note": _STR,
    },
    ["backend", "groups"],
    runs=False,  # a reading of the backend's quota, not a run
)

_JOB_PROPERTIES: dict[str, Any] = {
    "job_id": _STR,
    "state": {"enum": ["queued", "starting", "running", "done", "failed", "cancelled"]},
    "elapsed": {"type": "string", "pattern": r"^\d+\.\ds$"},
    "tool": _STR,
    "backend": _STR,
    "result": _STR,
    "error": _STR,
    "failure_reason": _STR,
    "partial": {"type": "boolean"},
    "recovery": _STR,
    "retryable": {"type": "boolean"},
    "error_id": _STR,
    "conversation_id": _STR,
    "model": _STR,
    "step_type": {
        "type": "string",
        "description": "What the run is doing (agent_response, tool, …); an ended job keeps its last step.",
    },
    "usage": {  # the relay's names, and agy-mcp's cache_read_tokens (= cached_tokens) for its users
        "type": "object",
        "properties": {**USAGE["properties"], "cache_read_tokens": _INT},
        "additionalProperties": {"type": "integer"},
    },
    "turns": {"type": "integer"},
    "num_turns": {"type": "integer", "description": "agy-mcp's name for `turns` (the same value)."},
    "notices": _STRS,
    "structured_output": {},
    "files": _STRS,
    "note": _STR,
    "next": _STR,
    # isolation "worktree": the branch (and, once the job ended, its diff: files, insertions, deletions)
    "worktree": {"type": "object", "properties": {"branch": _STR, "path": _STR}, "required": ["branch"]},
}
JOB_STATUS: dict[str, Any] = reply_schema(
    {**_JOB_PROPERTIES, "quota": QUOTA_SUMMARY}, ["job_id", "state", "elapsed", "tool", "backend"]
)
# gemini-run: the new job (or, for a matched idempotencyKey, its status)
JOB_STARTED: dict[str, Any] = reply_schema({**_JOB_PROPERTIES, "quota": QUOTA_SUMMARY}, ["job_id", "state"])
JOB_LIST: dict[str, Any] = reply_schema(
    {
        "jobs": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {**_JOB_PROPERTIES, "created": _STR, "preview": _STR},
                "required": ["job_id", "state", "tool", "backend", "created"],
            },
        },
        "count": _INT,
    },
    ["jobs", "count"],
    runs=False,
)
ASSESSMENT: dict[str, Any] = reply_schema(
    {
        "diffSource": {"enum": ["uncommitted", "branch"]},
        "base": _NULLABLE_STR,
        "diffStat": {
            "type": "object",
            "properties": {"files": _INT, "insertions": _INT, "deletions": _INT, "binaryFiles": _INT},
            "required": ["files", "insertions", "deletions"],
        },
        "changedFiles": _STRS,
        "renamedFrom": {"type": "object", "additionalProperties": _STR},
        "untrackedFiles": _STRS,
        "complexity": {"enum": ["trivial", "moderate", "complex"]},
        "diffKind": _STR,
        "guidance": _STR,
        "suggestions": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"depth": _STR, "estimatedSeconds": {"type": "number"}, "description": _STR},
                "required": ["depth", "estimatedSeconds"],
            },
        },
        "resolvedCwd": _STR,
    },
    ["diffSource", "diffStat", "changedFiles", "complexity", "diffKind", "suggestions"],
    runs=False,
)
MODELS: dict[str, Any] = reply_schema(
    {
        "backend": _STR,
        "notices": _STRS,
        "agents": {"type": ["array", "null"], "items": _STR},
        "models": _STRS,
        "model_details": {
            "type": "array",
            "items": {"type": "object", "properties": {"id": _STR, "label": _STR}, "required": ["id", "label"]},
        },
    },
    ["backend", "notices"],
    runs=False,
)
CONVERSATIONS: dict[str, Any] = reply_schema(
    {
        "source": _STR,
        "conversations": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"conversationId": _STR, "lastActive": _STR, "cwd": _STR, "firstPrompt": _STR},
                "required": ["conversationId", "lastActive", "cwd", "firstPrompt"],
            },
        },
        "notices": _STRS,
    },
    ["source", "conversations", "notices"],
    runs=False,
)
DOCTOR: dict[str, Any] = reply_schema(
    {
        "version": _STR,
        "python": _STR,
        "os": _STR,
        "projectRoot": _STR,
        "activeBackend": _STR,
        "backendChosenBy": {"enum": ["GEMINI_MCP_BACKEND", "automatic"]},
        "timeoutSeconds": {"type": "number"},
        "maxConcurrent": _INT,
        "sections": {"type": "object", "additionalProperties": _STRS},
        "ready": {"type": "boolean"},
        "problems": _STRS,
    },
    ["version", "activeBackend", "sections", "ready", "problems"],
    runs=False,
)
_VALUE = {"description": "The JSON answer; it validates against the call's own schema."}
STRUCTURED: dict[str, Any] = reply_schema(
    {
        "value": _VALUE,
        "repaired": {"type": "boolean"},
        "model": _NULLABLE_STR,
        "conversationId": _STR,
        "notices": _STRS,
    },
    ["value", "repaired"],
)
# gemini-ask / gemini-plan, when the call asked for data (not declared)
_CONTEXT = {
    "type": "object",
    "properties": {
        "tokens": _INT,
        "method": {"enum": ["counted", "estimated"]},
        "countedFor": _NULLABLE_STR,
        "budget": _INT,
        "files": _STRS,
        "leftOut": {
            "type": "array",
            "items": {"type": "object", "properties": {"path": _STR, "reason": _STR}, "required": ["path", "reason"]},
        },
    },
    "required": ["tokens", "method", "budget", "files", "leftOut"],
}
_DRY_RUN = {
    "type": "object",
    "properties": {
        "promptTokens": _INT,
        "method": {"enum": ["counted", "estimated"]},
        "model": _NULLABLE_STR,
        "estimatedInputUsd": {"type": ["number", "null"]},
        "rateCardAsOf": _NULLABLE_STR,
    },
    "required": ["promptTokens", "method", "model", "estimatedInputUsd"],
}
ANSWER_SCHEMA: dict[str, Any] = reply_schema(
    {"value": _VALUE, "usage": USAGE, "conversationId": _STR, "dryRun": _DRY_RUN, "context": _CONTEXT}, []
)
PLAN_SCHEMA: dict[str, Any] = reply_schema({"usage": USAGE}, [])  # gemini-plan: the usage it was asked for
TEXT_ANSWER: dict[str, Any] = reply_schema({}, [])  # an answer that is its text (and the run's receipt)
_MEDIA_PROPERTIES: dict[str, Any] = {
    "job_id": _STR,
    "state": _JOB_PROPERTIES["state"],
    "files": _STRS,
    "path": _STR,
    "model": _NULLABLE_STR,
    "usage": USAGE,
    "notices": _STRS,
    "next": _STR,
}
MEDIA: dict[str, Any] = reply_schema(_MEDIA_PROPERTIES, [])  # a generation: its files, or the job to collect
USAGE_REPORT: dict[str, Any] = reply_schema(
    {
        "calls": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "job_id": _STR,
                    "tool": _STR,
                    "model": _STR,
                    "input_tokens": _INT,
                    "output_tokens": _INT,
                    "estimated_usd": {"type": ["number", "null"]},
                },
                "required": ["job_id", "tool", "model", "input_tokens", "output_tokens", "estimated_usd"],
            },
        },
        "input_tokens": _INT,
        "output_tokens": _INT,
        "estimated_usd": {"type": "number"},
        "unpriced_calls": _INT,
        "rate_card": {"type": "object", "properties": {"as_of": _STR, "source": _STR}},
        "note": _STR,
    },
    ["calls", "input_tokens", "output_tokens", "estimated_usd", "unpriced_calls"],
    runs=False,
)


def answer_data(
    *, value: Any = None, has_value: bool = False, usage: Usage | None = None, conversation_id: str | None = None
) -> dict[str, Any] | None:
    """gemini-ask's / gemini-plan's structured part: the jsonSchema answer and/or the usage (with the conversation
    the model continues); None when the call asked for neither, so a plain answer reaches the model as its text."""
    data: dict[str, Any] = {}
    if has_value:
        data["value"] = value
    if usage is not None:
        data["usage"] = asdict(usage)
    if data and conversation_id:
        data["conversationId"] = conversation_id
    return data or None
