"""The `outputSchema` of each data tool and the `structuredContent` builders that satisfy them.

The text block stays in every reply, for clients that read only text; structuredContent carries the same data.
Tools whose structured part is optional per call (gemini-ask's jsonSchema answers and usage, gemini-plan's usage)
declare no outputSchema, because a declared schema obliges every successful answer to carry structured content;
their structured content follows ANSWER_SCHEMA.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from gemini_relay.core.events import Usage

_STR = {"type": "string"}
_INT = {"type": "integer", "minimum": 0}
_STRS = {"type": "array", "items": _STR}
_NULLABLE_STR = {"type": ["string", "null"]}

USAGE = {
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
    "usage": {"type": "object", "additionalProperties": {"type": "integer"}},
    "turns": {"type": "integer"},
    "notices": _STRS,
    "structured_output": {},
    "note": _STR,
}
JOB_STATUS: dict[str, Any] = {
    "type": "object",
    "properties": _JOB_PROPERTIES,
    "required": ["job_id", "state", "elapsed", "tool", "backend"],
}
JOB_STARTED: dict[str, Any] = {  # gemini-run: the new job (or, for a matched idempotencyKey, its status)
    "type": "object",
    "properties": {**_JOB_PROPERTIES, "next": _STR},
    "required": ["job_id", "state"],
}
JOB_LIST: dict[str, Any] = {
    "type": "object",
    "properties": {
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
    "required": ["jobs", "count"],
}
ASSESSMENT: dict[str, Any] = {
    "type": "object",
    "properties": {
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
    "required": ["diffSource", "diffStat", "changedFiles", "complexity", "diffKind", "suggestions"],
}
MODELS: dict[str, Any] = {
    "type": "object",
    "properties": {"backend": _STR, "lines": _STRS, "notices": _STRS},
    "required": ["backend", "lines", "notices"],
}
CONVERSATIONS: dict[str, Any] = {
    "type": "object",
    "properties": {
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
    "required": ["source", "conversations", "notices"],
}
DOCTOR: dict[str, Any] = {
    "type": "object",
    "properties": {
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
    "required": ["version", "activeBackend", "sections", "ready", "problems"],
}
STRUCTURED: dict[str, Any] = {
    "type": "object",
    "properties": {
        "value": {"description": "The JSON answer; it validates against the call's own schema."},
        "repaired": {"type": "boolean"},
        "model": _NULLABLE_STR,
    },
    "required": ["value", "repaired"],
}
ANSWER_SCHEMA: dict[str, Any] = {  # gemini-ask / gemini-plan, when the call asked for data (not declared)
    "type": "object",
    "properties": {"value": STRUCTURED["properties"]["value"], "usage": USAGE},
    "minProperties": 1,
}


def answer_data(*, value: Any = None, has_value: bool = False, usage: Usage | None = None) -> dict[str, Any] | None:
    """gemini-ask's / gemini-plan's structured part: the jsonSchema answer and/or the usage; None when neither."""
    data: dict[str, Any] = {}
    if has_value:
        data["value"] = value
    if usage is not None:
        data["usage"] = asdict(usage)
    return data or None
