"""The shared path of every prompt-running tool: inline `@` references, build the RunSpec, run it on the engine."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from gemini_relay.content.inline import InlineResult, inline_references
from gemini_relay.errors import InputError
from gemini_relay.jobs.models import RunOutcome, RunRecord, RunSpec
from gemini_relay.tools.context import Deps
from gemini_relay.tools.progress import CallProgress


@dataclass
class PromptRequest:
    tool: str
    prompt: str
    model: str | None = None
    effort: str | None = None
    mode: str | None = None
    json_schema: str | dict[str, Any] | None = None
    add_dirs: list[str] | None = None
    conversation_id: str | None = None
    agent: str | None = None
    allow_slash_commands: bool = False
    skip_permissions: bool = False
    sandbox: bool = False
    explicit: frozenset[str] = field(default_factory=frozenset[str])


@dataclass(frozen=True)
class PromptResult:
    outcome: RunOutcome
    notices: tuple[str, ...]  # the server's own notices first, then the run's
    record: RunRecord


async def run_prompt(deps: Deps, call: CallProgress, request: PromptRequest) -> PromptResult:
    """Raises InputError before anything is spawned; RunFailed and BackendUnavailable from the run."""
    schema = parse_schema(request.json_schema)
    inlined = inline_references(request.prompt, deps.settings.project_root)
    selection = deps.selection()
    spec = RunSpec(
        tool=request.tool,
        prompt=inlined.text,
        cwd=deps.settings.project_root,
        model=request.model,
        effort=request.effort,
        mode=request.mode,
        json_schema=schema,
        add_dirs=deps.resolve_dirs(request.add_dirs),
        conversation_id=request.conversation_id,
        agent=request.agent,
        allow_slash_commands=request.allow_slash_commands,
        skip_permissions=request.skip_permissions,
        sandbox=request.sandbox,
        timeout_seconds=deps.settings.timeout_seconds,
        explicit=request.explicit,
    )
    record = deps.engine.new_record(spec, selection.backend)
    call.watch(record)
    outcome = await deps.engine.execute(record)
    return PromptResult(outcome, tuple(inline_notices(inlined)) + outcome.notices, record)


def parse_schema(raw: str | dict[str, Any] | None) -> dict[str, Any] | None:
    if raw is None:
        return None
    if isinstance(raw, dict):
        return raw
    try:
        value = json.loads(raw)
    except ValueError as exc:
        raise InputError(f"jsonSchema is not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise InputError("jsonSchema must be a JSON object")
    return value


def inline_notices(result: InlineResult) -> list[str]:
    notices: list[str] = []
    if result.truncated:
        notices.append(f"Truncated to their first 256 KB: {', '.join(result.truncated)}")
    if result.omitted:
        notices.append(f"Left out over the 2 MB prompt budget: {', '.join(result.omitted)}")
    if result.unreadable:
        notices.append(f"Could not read: {', '.join(result.unreadable)}")
    return notices
