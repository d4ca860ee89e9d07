"""The shared path of every prompt-running tool: inline `@` references, build the RunSpec, run it on the engine.

Around the run: a capacity failure is retried once on the backend's fallback model while the deadline allows it,
the working tree can be checked for writes (the changeMode guardrail), and long answers are paged into chunks.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from gemini_relay.backends.capacity import CapacityFailure, capacity_of
from gemini_relay.content.chunking import CHUNK_SIZE, CHUNK_THRESHOLD, chunk_footer, split_text
from gemini_relay.content.git_diff import GitError, git_env
from gemini_relay.content.guardrail import Snapshot, WriteCheck, compare, take_snapshot
from gemini_relay.content.inline import InlineResult, inline_references
from gemini_relay.content.json_schema import load_schema
from gemini_relay.core.receipt import Receipt
from gemini_relay.core.result import RunResult
from gemini_relay.core.spec import MediaRef, RunSpec
from gemini_relay.core.vocabulary import BackendName, FailureReason
from gemini_relay.errors import RunFailed
from gemini_relay.jobs import RunRecord
from gemini_relay.log import logger
from gemini_relay.tools.common.context import Deps, Reply
from gemini_relay.tools.common.controls import call_timeout, conversation_to_continue, name_timeout_limit
from gemini_relay.tools.common.progress import CallProgress

TEXT_CHUNK_KIND = "text"  # ChunkCache kind of paged answers (fetch-chunk renders the generic footer)
MIN_FALLBACK_SECONDS = 10.0  # a retry with less of the original deadline left could not finish a CLI start


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
    timeout_seconds: float | None = None  # None: GEMINI_MCP_TIMEOUT
    inline: bool = True  # expand `@` references (off for text that is not the user's prose, such as a diff)
    fallback: bool = True  # retry a capacity failure once on GEMINI_FALLBACK_MODEL
    guard_writes: bool = False  # snapshot the git working tree before and after (PromptResult.writes)
    cwd: Path | None = None  # the run's working directory (already resolved); None: the project root
    continue_latest: bool = False  # continue the newest saved conversation of `cwd` (controls.py)
    images: tuple[MediaRef, ...] = ()  # resolved by tools/media/prompt_images.gather_images, its own async step


@dataclass(frozen=True)
class PromptResult:
    outcome: RunResult
    notices: tuple[str, ...]  # the server's own notices first, then the run's
    record: RunRecord
    writes: WriteCheck | None = None  # None: not asked for, or the project is not a git working tree
    fallback_model: str | None = None  # set when the fallback model gave this answer

    @property
    def receipts(self) -> tuple[Receipt, ...]:
        return (self.outcome.receipt,) if self.outcome.receipt is not None else ()


async def run_prompt(deps: Deps, call: CallProgress, request: PromptRequest) -> PromptResult:
    """Raises InputError before anything is spawned; RunFailed and BackendUnavailable from the run."""
    schema = parse_schema(request.json_schema)
    root = request.cwd or deps.settings.project_root
    ceiling = deps.settings.timeout_seconds
    requested = call_timeout(request.timeout_seconds, ceiling)
    conversation_id = await conversation_to_continue(deps, request.conversation_id, request.continue_latest, root)
    inlined = inline_references(request.prompt, root) if request.inline else None
    selection = deps.selection()
    spec = RunSpec(
        tool=request.tool,
        prompt=inlined.text if inlined is not None else request.prompt,
        cwd=root,
        model=request.model,
        effort=request.effort,
        mode=request.mode,
        json_schema=schema,
        add_dirs=deps.resolve_dirs(request.add_dirs, root),
        conversation_id=conversation_id,
        agent=request.agent,
        allow_slash_commands=request.allow_slash_commands,
        skip_permissions=request.skip_permissions,
        sandbox=request.sandbox,
        timeout_seconds=requested or ceiling,
        explicit=request.explicit,
        images=request.images,
    )
    before = await _snapshot(deps, root) if request.guard_writes else None
    try:
        record, outcome, fallback = await _execute(deps, call, spec, selection.backend, request.fallback)
    except RunFailed as exc:
        if exc.reason is FailureReason.TIMEOUT:
            name_timeout_limit(exc, requested, ceiling, chosen="timeout_seconds" in request.explicit)
        raise
    own = inline_notices(inlined) if inlined is not None else []
    if fallback is not None:
        own.append(fallback.notice)
    writes = await _check_writes(deps, before, root) if request.guard_writes else None
    return PromptResult(
        outcome, tuple(own) + outcome.notices, record, writes, fallback.model if fallback is not None else None
    )


@dataclass(frozen=True)
class _Fallback:
    model: str
    notice: str


async def _execute(
    deps: Deps, call: CallProgress, spec: RunSpec, backend: BackendName, allow_fallback: bool
) -> tuple[RunRecord, RunResult, _Fallback | None]:
    record = await deps.runs.register(spec, backend)
    call.watch(record)
    try:
        return record, await deps.runs.execute(record), None
    except RunFailed as exc:
        plan = _fallback_plan(deps, record, exc) if allow_fallback else None
        if plan is None:
            raise
        model, remaining, capacity = plan
    failed = record.model or spec.model or "the default model"  # the CLI reports the model it really used
    logger.info("Run %s hit a capacity limit (%s); retrying once on %s", record.run_id, capacity.kind, model)
    retry = await deps.runs.register(replace(spec, model=model, timeout_seconds=remaining), backend)
    call.watch(retry)
    try:
        outcome = await deps.runs.execute(retry)
    except RunFailed as exc:
        exc.recovery = " ".join(
            filter(
                None,
                [
                    exc.recovery,
                    f"(This was the fallback model {model}, tried after {failed} hit a "
                    f"capacity limit: {capacity.describe()}.)",
                ],
            )
        )
        raise
    notice = (
        f"{model} answered: {failed} hit a capacity limit ({capacity.describe()}), so the call was retried once "
        "on the fallback model (GEMINI_FALLBACK_MODEL)."
    )
    return retry, outcome, _Fallback(model, notice)


def _fallback_plan(deps: Deps, record: RunRecord, exc: RunFailed) -> tuple[str, float, CapacityFailure] | None:
    """(model, seconds left, failure) when a capacity failure may be retried on the fallback model; else None."""
    capacity = capacity_of(exc)
    fallback = deps.registry.fallback_for(record.backend)
    if capacity is None or fallback is None:
        return None
    default = deps.registry.default_model(record.backend)
    tried = {m.casefold() for m in (record.spec.model or default, record.model) if m}
    if fallback.casefold() in tried:
        return None
    remaining = record.spec.timeout_seconds - record.elapsed
    if remaining < MIN_FALLBACK_SECONDS:
        logger.info("No fallback for run %s: %.1fs of its deadline left", record.run_id, remaining)
        return None
    return fallback, remaining, capacity


async def _snapshot(deps: Deps, root: Path) -> Snapshot | WriteCheck | None:
    try:
        return await take_snapshot(root, git_env(deps.settings.env))
    except GitError as exc:
        return WriteCheck(error=str(exc))


async def _check_writes(deps: Deps, before: Snapshot | WriteCheck | None, root: Path) -> WriteCheck | None:
    if before is None or isinstance(before, WriteCheck):
        return before
    after = await _snapshot(deps, root)
    if isinstance(after, Snapshot):
        return compare(before, after)
    return after if after is not None else WriteCheck(error="the git working tree disappeared during the run")


def paginate(deps: Deps, text: str, meta: dict[str, Any] | None = None) -> Reply:
    """A reply over CHUNK_THRESHOLD characters becomes chunk 1 of ~CHUNK_SIZE pieces plus a fetch-chunk footer.

    The pieces concatenate to exactly `text`; later ones are served by gemini-fetch-chunk from the shared cache.
    """
    if len(text) <= CHUNK_THRESHOLD:
        return Reply(text, meta)
    chunks = split_text(text, CHUNK_SIZE)
    key = deps.chunks.put(chunks, TEXT_CHUNK_KIND)
    paged = {**(meta or {}), "chunked": True, "chunkCacheKey": key, "chunkIndex": 1, "totalChunks": len(chunks)}
    return Reply(chunks[0] + chunk_footer(1, len(chunks), key), paged)


def parse_schema(raw: str | dict[str, Any] | None, field: str = "jsonSchema") -> dict[str, Any] | None:
    """The schema as an object, checked against its metaschema before anything runs (InputError otherwise)."""
    return None if raw is None else load_schema(raw, field=field)


def inline_notices(result: InlineResult) -> list[str]:
    notices: list[str] = []
    if result.truncated:
        notices.append(f"Truncated to their first 256 KB: {', '.join(result.truncated)}")
    if result.omitted:
        notices.append(f"Left out over the 2 MB prompt budget: {', '.join(result.omitted)}")
    if result.unreadable:
        notices.append(f"Could not read: {', '.join(result.unreadable)}")
    return notices
