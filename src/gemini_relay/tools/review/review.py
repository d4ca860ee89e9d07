"""gemini-review: a read-only code review of a git diff by Gemini, at a depth (scan, focused, deep)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Literal

from pydantic import Field

from gemini_relay.backends.capacity import capacity_of
from gemini_relay.content.git_diff import DiffSpec, DiffStat, diff_spec, git_env, numstat, read_diff, summarize
from gemini_relay.content.review_prompt import (
    HARD_TIMEOUT_CAP,
    MAX_DIFF_BYTES,
    ReviewDepth,
    build_review_prompt,
    capacity_text,
    resolve_depth,
    review_timeout,
    strip_preamble,
    timeout_hint,
)
from gemini_relay.core.vocabulary import Effect, FailureReason, Toolset
from gemini_relay.errors import RunFailed, RunTimedOut
from gemini_relay.format import gemini_reply, with_notices
from gemini_relay.tools.common.context import Deps, Reply
from gemini_relay.tools.common.controls import call_timeout, timeout_field
from gemini_relay.tools.common.definition import Doc, ToolDef, When
from gemini_relay.tools.common.output_schemas import TEXT_ANSWER
from gemini_relay.tools.common.progress import CallProgress
from gemini_relay.tools.common.prompt_run import PromptRequest, paginate, run_prompt
from gemini_relay.tools.review.review_inputs import LENGTH_LIMIT, MAX_WORDS, DiffInput

Depth = Literal["scan", "focused", "deep"]


class ReviewInput(DiffInput):
    focus: str | None = Field(None, description="What to pay special attention to, e.g. 'security' or 'error paths'.")
    depth: Depth | None = Field(
        None,
        description="'scan', 'focused' or 'deep' (the default): how much beyond the diff the review reads, as the "
        "tool's description says. All read-only. Run gemini-assess to choose.",
    )
    quick: bool | None = Field(
        None, description="Deprecated: true means depth 'scan', false means 'deep'. depth wins when both are set."
    )
    model: str | None = Field(None, description="Model id or alias ('flash', 'pro'); unset: the backend default.")
    timeout: float | None = Field(
        None,
        gt=0,
        description=f"Seconds the review may take. Default: scaled by depth and changed files (scan 180; focused "
        f"120 + 15/file up to 300; deep 240 + 45/file). Capped at {int(HARD_TIMEOUT_CAP)}.",
    )
    max_response_length: int | None = Field(None, ge=1, le=MAX_WORDS, description=LENGTH_LIMIT)
    timeout_seconds: float | None = timeout_field()


async def review(deps: Deps, args: ReviewInput, call: CallProgress) -> Reply:
    # timeoutSeconds, the shared control, is bounded like every tool's; the older `timeout` stays capped quietly.
    chosen = call_timeout(args.timeout_seconds, deps.settings.timeout_seconds)
    spec = diff_spec(uncommitted=args.uncommitted, base=args.base)
    depth = resolve_depth(args.depth, args.quick)
    root = deps.resolve_cwd(args.working_directory, "workingDirectory")
    env = git_env(deps.settings.env)
    stat = summarize(await numstat(root, spec, env))
    timeout = review_timeout(depth, stat.files, chosen or args.timeout, deps.settings.timeout_seconds)
    meta: dict[str, Any] = {
        "depth": depth,
        "diffSource": "branch" if spec.base else "uncommitted",
        "base": spec.base,
        "diffStat": {"files": stat.files, "insertions": stat.insertions, "deletions": stat.deletions},
        "appliedTimeout": timeout.seconds,
        "timeoutScaled": timeout.scaled,
        "resolvedCwd": str(root),
    }
    if stat.files == 0:  # nothing to review: no model session is started
        empty = f"No diff found between {spec.base} and HEAD." if spec.base else "No uncommitted changes found."
        return Reply(empty, meta)
    diff, truncated = await read_diff(root, spec, env, max_bytes=MAX_DIFF_BYTES)
    notices = _review_notices(args, timeout.notice, truncated)
    request = PromptRequest(
        tool=call.tool,
        prompt=build_review_prompt(
            depth, diff=diff, spec=spec, focus=args.focus, max_words=args.max_response_length, truncated=truncated
        ),
        model=args.model,
        mode="plan",  # every depth is read-only; deep explores with read tools, it does not run the code
        timeout_seconds=timeout.seconds,
        inline=False,  # a diff is not prose: `@decorator` or `@/etc/passwd` in it must stay text
        fallback=depth != "deep",  # deep reports capacity failures instead (the caller chooses what to do)
        guard_writes=True,
        explicit=frozenset(args.model_fields_set),
        cwd=root,
    )
    try:
        result = await run_prompt(deps, call, request)
    except RunFailed as exc:
        if exc.reason is not FailureReason.TIMEOUT:
            return _capacity_reply(exc, depth, notices, meta)
        seconds = exc.seconds if isinstance(exc, RunTimedOut) else timeout.seconds
        hint = timeout_hint(depth, seconds, stat)
        if not exc.partial_text.strip():
            exc.recovery = hint.replace("; what follows are its partial findings", " before any finding arrived")
            raise
        body = _title(depth, spec, stat, partial=True) + strip_preamble(exc.partial_text)
        text = gemini_reply(body, notices=(hint, *notices), prefixed=False)
        reply = paginate(deps, text, meta | {"partial": True, "timedOut": True})
        return replace(reply, receipts=(exc.receipt,)) if exc.receipt is not None else reply
    extra = [result.writes.describe()] if result.writes is not None and not result.writes.clean else []
    outcome = result.outcome
    text = gemini_reply(
        _title(depth, spec, stat) + strip_preamble(outcome.text),
        notices=(*notices, *extra, *result.notices),
        conversation_id=outcome.conversation_id,
        prefixed=False,
    )
    meta["model"] = result.fallback_model or result.record.model or request.model
    return replace(paginate(deps, text, meta), receipts=result.receipts)


def _capacity_reply(exc: RunFailed, depth: ReviewDepth, notices: list[str], meta: dict[str, Any]) -> Reply:
    """A deep review's capacity failure as data (no retry was made); any other failure propagates."""
    capacity = capacity_of(exc) if depth == "deep" else None
    if capacity is None:
        raise exc
    failed = meta | {"capacityFailure": capacity.as_meta()}
    return Reply(with_notices(notices, capacity_text(depth, capacity)), failed)


def _review_notices(args: ReviewInput, timeout_notice: str | None, truncated: bool) -> list[str]:
    notices = [timeout_notice] if timeout_notice else []
    if args.quick is not None:
        used = "depth wins" if args.depth is not None else f"it was read as depth {'scan' if args.quick else 'deep'}"
        notices.append(f"quick is deprecated; use depth ({used}).")
    if truncated:
        notices.append(f"The diff is larger than {MAX_DIFF_BYTES // 1024} KB; only its first part was reviewed.")
    return notices


def _title(depth: ReviewDepth, spec: DiffSpec, stat: DiffStat, *, partial: bool = False) -> str:
    size = f"{stat.files} file(s), +{stat.insertions} / -{stat.deletions}"
    return f"Gemini review ({depth}{', partial' if partial else ''}; {spec.describe()}; {size}):\n"


DOC = Doc(
    lambda upstream: (
        "Code review of a git diff by Gemini, read-only, at a chosen depth: 'scan' (the diff only, ~30 s), "
        + (
            "'focused' (the diff plus the changed files), 'deep' (agentic: follows imports and tests, reads "
            "AGENTS.md/GEMINI.md; the default)"
            if upstream.agent
            else "'focused' and 'deep' (the default; here the model reads no files itself, so they see the diff too)"
        )
        + ". Timeouts scale with depth and changed files; a timed-out review returns its partial findings. "
        "Uncommitted work by default, or base...HEAD. Use gemini-assess first to pick a depth."
    ),
    prompt="Review uncommitted changes or a branch diff with Gemini.",
    when=When(50, "a review of the uncommitted diff or base...HEAD; gemini-assess first sizes it, no model call"),
)
TOOL = ToolDef(
    "gemini-review", ReviewInput, review, Effect.ASKS, DOC, toolset=Toolset.REVIEW, output_schema=TEXT_ANSWER
)
