"""Per-call controls every run-shaping tool shares: `timeoutSeconds` (bounded by the server's GEMINI_MCP_TIMEOUT,
which tools/list shows as the schema's `maximum`) and `continueLatest` (the newest saved conversation of this
project on the active backend, so a caller can continue without remembering its id).

Checked before anything is spawned: a bad value is an InputError naming the field, never a failed run.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pydantic import Field

from gemini_relay.errors import InputError, RunFailed
from gemini_relay.tools.common.context import Deps

TIMEOUT_FIELD = "timeoutSeconds"
LATEST_SCAN = 100  # saved conversations read to find this project's newest (gemini-conversations' own maximum)


def timeout_field() -> Any:
    """The `timeoutSeconds` field; its `maximum` is added per server (schema_with_limits), not fixed here."""
    return Field(
        None,
        gt=0,
    )


def idempotency_key_field(description: str) -> Any:
    """A caller's retry key; what a retry with it returns is the tool's to say."""
    return Field(None, min_length=1, max_length=200, description=description)


def continue_latest_field() -> Any:
    return Field(
        False,
        description="Continue this project's newest conversation.",
    )


def images_field() -> Any:
    return Field(
        None,
        description="Images: project paths, files/<id> uris or https URLs.",
    )


def schema_with_limits(schema: dict[str, Any], max_timeout: float) -> dict[str, Any]:
    """`schema` with the server's timeout bound as timeoutSeconds' `maximum` (a validating client refuses more)."""
    prop = schema.get("properties", {}).get(TIMEOUT_FIELD)
    if prop is None:
        return schema
    properties = {**schema["properties"], TIMEOUT_FIELD: {**prop, "maximum": _number(max_timeout)}}
    return {**schema, "properties": properties}


def call_timeout(requested: float | None, max_timeout: float) -> float | None:
    """The call's deadline in seconds (None: the server's maximum); above that maximum, a refusal of the field in
    the same `Invalid arguments for <tool>: timeoutSeconds: …` shape as a schema violation (the schema's `maximum`)."""
    if requested is not None and requested > max_timeout:
        raise InputError(
            f"{_number(requested)} is above this server's maximum of {_number(max_timeout)} seconds "
            "(GEMINI_MCP_TIMEOUT, in minutes). Give a smaller value or leave it unset.",
            field=TIMEOUT_FIELD,
        )
    return requested


def name_timeout_limit(exc: RunFailed, requested: float | None, max_timeout: float, *, chosen: bool) -> None:
    """Says in the failure which limit ended the run: the caller's timeoutSeconds (`chosen`), the tool's own
    deadline (gemini-review scales one), or the server's maximum."""
    if requested is not None:
        limit = f"this call's {TIMEOUT_FIELD if chosen else 'deadline'} ({_number(requested)} s)"
    else:
        limit = f"the server's maximum GEMINI_MCP_TIMEOUT ({_number(max_timeout)} s)"
    exc.recovery = " ".join(filter(None, [f"The limit hit was {limit}.", exc.recovery]))


async def conversation_to_continue(
    deps: Deps, conversation_id: str | None, continue_latest: bool, root: Path
) -> str | None:
    """The conversation a call continues: the id it gave, the newest of `root` when continueLatest, else None."""
    if not continue_latest:
        return conversation_id
    if conversation_id is not None:
        raise InputError("continueLatest and conversationId cannot be combined: give one or the other")
    rows = await deps.registry.conversations().conversation_rows(LATEST_SCAN)
    for row in rows.conversations:  # newest first
        if row.cwd and _same_dir(row.cwd, root):
            return row.id
    raise InputError(
        f"continueLatest: no saved {rows.source} conversation of {root} to continue. Start one without "
        "continueLatest (gemini-conversations lists the saved ones)."
    )


def _same_dir(cwd: str, root: Path) -> bool:
    try:
        return os.path.realpath(cwd) == os.path.realpath(root)
    except (OSError, ValueError):
        return False


def _number(value: float) -> int | float:
    return int(value) if float(value).is_integer() else value
