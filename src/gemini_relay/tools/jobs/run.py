"""gemini-run: start a Gemini run as a durable job and answer at once with its jobId (and the conversationId soon)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import anyio
from pydantic import Field

from gemini_relay.backends.asking import without_caller
from gemini_relay.content.changemode import wrap_changemode
from gemini_relay.content.inline import inline_references
from gemini_relay.content.review_prompt import length_limit
from gemini_relay.core.spec import RunSpec
from gemini_relay.core.vocabulary import Effect, Toolset
from gemini_relay.errors import InputError
from gemini_relay.jobs import JobOptions, Jobs
from gemini_relay.tools.common import output_schemas as out
from gemini_relay.tools.common.context import Deps, Reply
from gemini_relay.tools.common.controls import call_timeout, conversation_to_continue, idempotency_key_field
from gemini_relay.tools.common.definition import Doc, ToolDef, When
from gemini_relay.tools.common.inputs import Isolation, PromptOptions
from gemini_relay.tools.common.isolation import isolate, worktrees
from gemini_relay.tools.common.progress import CallProgress
from gemini_relay.tools.common.prompt_run import inline_notices, parse_schema
from gemini_relay.tools.jobs.collected import collected_reply
from gemini_relay.tools.jobs.manager import job_manager
from gemini_relay.tools.jobs.quota import with_quota
from gemini_relay.tools.jobs.views import collect_hint, started_reply, status_reply

CONVERSATION_ID_WAIT = 2.0  # agy names the conversation ~1 s after start; the Gemini CLI's is known at once


class RunInput(PromptOptions):
    """gemini-run: the gemini-ask run options, plus job controls. Answers at once with the job id.

    No chunkIndex / chunkCacheKey: a job's result is collected whole with gemini-wait or gemini-status.
    """

    max_response_length: int | None = Field(
        None,
        ge=1,
        le=100_000,
        description="A soft length limit in words, given to the model as an instruction (not with jsonSchema).",
    )

    idempotency_key: str | None = idempotency_key_field(
        "Retry-safe key: the same key with the same request returns the existing job instead of a new "
        "one; the same key with a different request is refused."
    )
    cwd: str | None = Field(
        None,
        min_length=1,
        max_length=4096,
        description="Working directory of this job (realpath-resolved, relative to the project root); `@` references "
        "are jailed to it. Refused outside GEMINI_RELAY_ALLOWED_ROOTS when that is set. Default: the project root.",
    )
    wait: float | None = Field(
        None,
        gt=0,
        description="Wait inline up to this many seconds (capped by GEMINI_RELAY_WAIT_CAP, 90) with progress: a job "
        "that ends in time answers as gemini-wait does, with its result; one still running answers with its jobId "
        "as without `wait` (agy-mcp's agy_run_sync). Not part of the idempotencyKey match.",
    )
    project_rules: bool | None = Field(
        None,
        description="false: the cwd is not passed as an --add-dir workspace, so older CLIs load no AGENTS.md or "
        "hooks from it (not an isolation). Default: AGY_PROJECT_RULES (on).",
    )
    priority: Literal["normal", "optional"] = Field(
        "normal",
        description="'optional' yields to quota: refused before starting when the backend reports the model's quota "
        "group low, critical or exhausted.",
    )
    isolation: Isolation = Field(
        "none",
        description="'worktree': the agent edits a fresh git worktree on a new branch from HEAD (uncommitted changes "
        "are refused, not carried over), never the project; the collected result has the branch, diff stat and "
        "patch, for gemini-apply or gemini-discard. Refused outside a git repository and on a backend without file "
        "tools.",
    )


async def run(deps: Deps, args: RunInput, call: CallProgress) -> Reply:
    runner = job_manager(deps)
    selection = deps.selection()
    retried = args.idempotency_key is not None and runner.job_for_key(args.idempotency_key) is not None
    # A retry whose key names a job gets that job whatever its priority and the quota now (agy-mcp's order).
    if (
        not retried
        and args.priority == "optional"
        and (low := deps.registry.quota_low_for(selection.backend, args.model))
    ):
        raise InputError(
            f"Refused an optional-priority run: {low}. Run it with priority normal, or wait for the reset."
        )
    cwd = deps.resolve_cwd(args.cwd, "cwd")
    timeout = call_timeout(args.timeout_seconds, deps.settings.timeout_seconds) or deps.settings.timeout_seconds
    conversation_id = await conversation_to_continue(deps, args.conversation_id, args.continue_latest, cwd)
    schema = parse_schema(args.json_schema)
    if schema is not None and args.change_mode:  # refused exactly as gemini-ask refuses it
        raise InputError("changeMode and jsonSchema cannot be combined: changeMode answers are edit blocks, not JSON")
    prompt = args.prompt
    ignored: list[str] = []
    if args.max_response_length is not None:
        if schema is None:
            prompt += "\n\n" + length_limit(args.max_response_length)  # as gemini-ask: an instruction
        else:
            ignored.append("maxResponseLength does not apply to a jsonSchema answer; it was ignored.")
    prompt = wrap_changemode(prompt) if args.change_mode else prompt
    if args.isolation == "worktree":
        cwd = await _isolated_cwd(deps, runner, args, cwd, schema is not None)
    inlined = inline_references(prompt, cwd)
    spec = RunSpec(
        tool=call.tool,
        prompt=inlined.text,
        cwd=cwd,
        model=args.model,
        effort=args.effort,
        mode=args.mode or ("accept-edits" if args.isolation == "worktree" else None),
        json_schema=schema,
        add_dirs=deps.resolve_dirs(args.add_dirs, cwd),
        conversation_id=conversation_id,
        # A backend that takes a caller-chosen id (Gemini CLI, API) names a fresh job's conversation at once.
        session_id=None if conversation_id else deps.registry.fresh_conversation_id(selection.backend),
        agent=args.agent,
        allow_slash_commands=args.allow_slash_commands,
        skip_permissions=args.skip_permissions,
        sandbox=args.sandbox,
        project_rules=args.project_rules,
        timeout_seconds=timeout,
        explicit=frozenset(args.model_fields_set),
    )
    try:
        with without_caller():  # the job outlives this call: its questions are answered by its policy
            options = JobOptions(args.priority, args.idempotency_key)
            record = await deps.runs.register(spec, selection.backend, options)
    except BaseException:  # cleanup, re-raised: a worktree no job will run in is removed
        if (made := worktrees(deps).containing(cwd)) is not None and not retried:
            with anyio.CancelScope(shield=True):
                await worktrees(deps).discard(made)  # no job will ever run in it
        raise
    if record.reused_job:
        status = runner.status(record.run_id)
        matched = {**status.to_json(), "note": "idempotencyKey matched this existing job"}
        if not status.state.terminal:
            matched["note"] += "; " + collect_hint(record.run_id)
        return status_reply(with_quota(deps, matched))
    assert deps.background is not None
    with without_caller():
        deps.background.start_soon(deps.run_detached, record)
    limit = None if args.wait is None else min(args.wait, deps.settings.wait_cap_seconds)
    notices = [*ignored, *inline_notices(inlined)]
    if limit is not None:

        def on_tail(tail: str) -> None:
            call.output = tail

        status = await runner.wait(record.run_id, limit, on_tail=on_tail)
        if status.state.terminal:  # collected here, so hook-wait owes no wake for it
            data = (await runner.collect(record.run_id)).to_json()
            if notices:
                data["notices"] = [*notices, *data.get("notices", [])]
            return await collected_reply(deps, data)
    else:  # agy names the conversation ~1 s in; an inline wait takes it from the status it polls anyway
        status = await runner.wait(
            record.run_id, CONVERSATION_ID_WAIT, until=lambda s: s.conversation_id is not None or s.state.terminal
        )
    reply: dict[str, Any] = {"job_id": record.run_id, "state": status.state.value}
    if (isolated := worktrees(deps).containing(cwd)) is not None:
        reply["worktree"] = {"branch": isolated.branch, "path": str(isolated.path)}
    if status.conversation_id:
        reply["conversation_id"] = status.conversation_id
    if notices:
        reply["notices"] = notices
    waited = f"Still {status.state.value} after {limit:g}s. " if limit is not None else ""
    reply["next"] = waited + collect_hint(record.run_id)
    return started_reply(with_quota(deps, reply, selection.backend))


async def _isolated_cwd(deps: Deps, runner: Jobs, args: RunInput, cwd: Path, structured: bool) -> Path:
    """The job's cwd in a new worktree; a retry whose idempotencyKey names a job gets that job's (its request)."""
    bound = runner.job_for_key(args.idempotency_key) if args.idempotency_key is not None else None
    if bound is not None:
        return runner.store.meta(bound).spec.cwd
    return (await isolate(deps, cwd, {"changeMode": args.change_mode, "jsonSchema": structured})).cwd


DOC = Doc(
    "Start a Gemini run as a durable job and answer at once with its jobId (and the conversationId when the "
    "backend names it within ~2 s). The job survives client timeouts, this server exiting and crashes; collect "
    "it with gemini-wait or gemini-status, or pass `wait` to wait for it inline. Takes every gemini-ask option "
    "plus idempotencyKey, priority and wait.",
    prompt="Start a long Gemini run in the background.",
    when=When(80, "long work in the background: it answers at once with a job_id"),
)
TOOL = ToolDef(
    "gemini-run",
    RunInput,
    run,
    Effect.WRITES,
    DOC,
    toolset=Toolset.JOBS,
    output_schema=out.JOB_STARTED,
    answers_at_once=True,
)
