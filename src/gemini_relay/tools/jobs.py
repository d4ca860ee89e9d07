"""The `jobs` toolset: gemini-run (start, answer at once), gemini-status, gemini-wait, gemini-jobs, cancel by id."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from gemini_relay.content.changemode import wrap_changemode
from gemini_relay.content.inline import inline_references
from gemini_relay.content.review import length_limit
from gemini_relay.core.spec import RunSpec
from gemini_relay.core.vocabulary import RunState
from gemini_relay.errors import InputError
from gemini_relay.jobs.engine.runners import JobOptions
from gemini_relay.jobs.host.attach import HostedJobManager
from gemini_relay.tools.common.context import Deps, Reply
from gemini_relay.tools.common.inputs import CancelJobInput, JobsInput, RunInput, StatusInput, WaitInput
from gemini_relay.tools.common.progress import CallProgress
from gemini_relay.tools.common.runner import inline_notices, parse_schema

CONVERSATION_ID_WAIT = 2.0  # agy names the conversation ~1 s after start; the Gemini CLI's is known at once
PREVIEW_CHARS = 200


def _runner(deps: Deps) -> HostedJobManager:
    if deps.jobs is None:
        raise InputError("Jobs are not available: this server runs without a state dir")
    return deps.jobs


def _json(data: dict[str, Any]) -> str:
    return json.dumps(data, ensure_ascii=False, indent=2)


async def run(deps: Deps, args: RunInput, call: CallProgress) -> Reply:
    runner = _runner(deps)
    selection = deps.selection()
    if args.priority == "optional" and (low := deps.registry.quota_low_for(selection.backend, args.model)):
        raise InputError(
            f"Refused an optional-priority run: {low}. Run it with priority normal, or wait for the reset."
        )
    cwd = deps.resolve_cwd(args.cwd, "cwd")
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
    inlined = inline_references(prompt, cwd)
    spec = RunSpec(
        tool=call.tool,
        prompt=inlined.text,
        cwd=cwd,
        model=args.model,
        effort=args.effort,
        mode=args.mode,
        json_schema=schema,
        add_dirs=deps.resolve_dirs(args.add_dirs, cwd),
        conversation_id=args.conversation_id,
        # A backend that takes a caller-chosen id (Gemini CLI, API) names a fresh job's conversation at once.
        session_id=None if args.conversation_id else deps.registry.fresh_conversation_id(selection.backend),
        agent=args.agent,
        allow_slash_commands=args.allow_slash_commands,
        skip_permissions=args.skip_permissions,
        sandbox=args.sandbox,
        timeout_seconds=deps.settings.timeout_seconds,
        explicit=frozenset(args.model_fields_set),
    )
    record = await deps.engine.register(spec, selection.backend, JobOptions(args.priority, args.idempotency_key))
    if record.reused_job:
        status = runner.status(record.run_id)
        matched = {**status.to_json(), "note": "idempotencyKey matched this existing job"}
        return Reply(_json(matched), structured=matched)
    assert deps.background is not None
    deps.background.start_soon(deps.run_detached, record)
    status = await runner.wait(
        record.run_id, CONVERSATION_ID_WAIT, until=lambda s: s.conversation_id is not None or s.state.terminal
    )
    reply: dict[str, Any] = {"job_id": record.run_id, "state": status.state.value}
    if status.conversation_id:
        reply["conversation_id"] = status.conversation_id
    notices = [*ignored, *inline_notices(inlined)]
    if notices:
        reply["notices"] = notices
    reply["next"] = f'Collect it with gemini-wait {{"jobId": "{record.run_id}"}} or gemini-status.'
    return Reply(_json(reply), structured=reply)


async def status(deps: Deps, args: StatusInput, call: CallProgress) -> Reply:
    data = (await _runner(deps).collect(args.job_id)).to_json()
    return Reply(_json(data), structured=data)


async def wait(deps: Deps, args: WaitInput, call: CallProgress) -> Reply:
    runner = _runner(deps)
    limit = min(args.wait if args.wait is not None else deps.settings.wait_cap_seconds, deps.settings.wait_cap_seconds)
    runner.status(args.job_id)  # an unknown job is refused at once, not after the wait

    def on_tail(tail: str) -> None:
        call.output = tail

    await runner.wait(args.job_id, limit, on_tail=on_tail)
    result = await runner.collect(args.job_id)
    data = result.to_json()
    if not result.state.terminal:
        data["note"] = f"Still {result.state.value} after {limit:g}s; call gemini-wait again."
    return Reply(_json(data), structured=data)


async def jobs(deps: Deps, args: JobsInput, call: CallProgress) -> Reply:
    listed = []
    for row in _runner(deps).jobs(args.state, args.limit):
        item = {k: v for k, v in row.to_json().items() if k not in ("result", "usage", "notices", "structured_output")}
        item["created"] = datetime.fromtimestamp(row.created_at, UTC).isoformat(timespec="seconds")
        if row.text:
            item["preview"] = row.text[:PREVIEW_CHARS]
        listed.append(item)
    data = {"jobs": listed, "count": len(listed)}
    return Reply(_json(data), structured=data)


async def cancel(deps: Deps, args: CancelJobInput, call: CallProgress) -> Reply:
    if args.job_id is None:
        count = deps.engine.cancel_all("was cancelled by gemini-cancel")
        return Reply("Nothing was running." if count == 0 else f"Cancelled {count} run(s).")
    runner = _runner(deps)
    before = runner.status(args.job_id)
    if before.state.terminal:
        return Reply(f"Job {args.job_id} had already ended ({before.state.value}).")
    after = await runner.cancel(args.job_id)
    if after.state is RunState.QUEUED:
        return Reply(f"Job {args.job_id} will not start: it was cancelled while queued.")
    # The job's own age, not how long the cancel took: a 150 s job said "cancelled after 0.0s".
    return Reply(f"Cancelled job {args.job_id} ({after.state.value} after {after.elapsed:.1f}s).")
