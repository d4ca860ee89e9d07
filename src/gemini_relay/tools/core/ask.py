"""gemini-ask: the general relay call (changeMode, jsonSchema, conversationId, chunk paging, packed `files`,
dryRun, outputFile)."""

from __future__ import annotations

from dataclasses import replace

from pydantic import Field

from gemini_relay.content.changemode import (
    CHANGEMODE_CHUNK_KIND,
    changemode_footer,
    edits_as_meta,
    no_edits_text,
    parse_edits,
    render_edits,
    wrap_changemode,
)
from gemini_relay.content.guardrail import WriteCheck
from gemini_relay.content.review_prompt import length_limit
from gemini_relay.core.result import RunResult
from gemini_relay.core.vocabulary import Effect
from gemini_relay.errors import InputError
from gemini_relay.format import RESPONSE_PREFIX, gemini_reply, with_notices
from gemini_relay.tools.common.context import Deps, Reply
from gemini_relay.tools.common.context_pack import ContextOptions, Prepared, context_meta, prepare_prompt
from gemini_relay.tools.common.controls import images_field
from gemini_relay.tools.common.definition import Doc, ToolDef, When
from gemini_relay.tools.common.dry_run import dry_run_reply
from gemini_relay.tools.common.inputs import CACHE_KEY_PATTERN, Isolation, PathText, PromptOptions
from gemini_relay.tools.common.isolation import isolate, run_isolated, worktree_data, worktree_text
from gemini_relay.tools.common.output_file import output_target, write_output
from gemini_relay.tools.common.output_schemas import ANSWER_SCHEMA, answer_data
from gemini_relay.tools.common.progress import CallProgress
from gemini_relay.tools.common.prompt_images import gather_images
from gemini_relay.tools.common.prompt_run import PromptRequest, paginate, parse_schema, run_prompt
from gemini_relay.tools.common.structured_answer import run_structured
from gemini_relay.tools.core.fetch_chunk import cached_chunk


class AskInput(ContextOptions, PromptOptions):
    """gemini-ask: the run options, packed `files`, plus paging of a chunked reply, which only a foreground answer
    has."""

    chunk_index: int | str | None = Field(None, description="Which chunk (1-based) to return, with chunkCacheKey.")
    chunk_cache_key: str | None = Field(None, pattern=CACHE_KEY_PATTERN, description="A chunked reply's cacheKey.")
    max_response_length: int | None = Field(
        None,
        ge=1,
        le=100_000,
        description="Soft answer length limit, in words.",
    )
    images: list[PathText] | None = images_field()
    dry_run: bool = Field(
        False,
        description="Count tokens and cost; no model call.",
    )
    output_file: PathText | None = Field(
        None,
        description="Write the answer to this project file instead; an existing one needs overwrite.",
    )
    overwrite: bool = False  # outputFile's description names it
    isolation: Isolation = "none"  # described in docs/tools.md and gemini-run's schema: the default list's budget


async def ask(deps: Deps, args: AskInput, call: CallProgress) -> Reply:
    index = _chunk_index(args.chunk_index)
    if args.chunk_cache_key is not None:
        # Paging an earlier reply: no model turn.
        return Reply(cached_chunk(deps.chunks, args.chunk_cache_key, index or 1))
    schema = parse_schema(args.json_schema)  # checked before anything runs
    if schema is not None and args.change_mode:
        raise InputError("changeMode and jsonSchema cannot be combined: changeMode answers are edit blocks, not JSON")
    if args.output_file is not None and args.change_mode:
        raise InputError("outputFile and changeMode cannot be combined: changeMode answers are edits to apply")
    root = deps.settings.project_root
    target = output_target(root, args.output_file, overwrite=args.overwrite) if args.output_file else None
    prompt = args.prompt
    if args.max_response_length is not None and schema is None:
        prompt += "\n\n" + length_limit(args.max_response_length)  # soft: an instruction, never a truncation
    prompt = wrap_changemode(prompt) if args.change_mode else prompt
    prepared = await prepare_prompt(deps, prompt, args, args.model) if args.files or args.dry_run else None
    if args.dry_run and prepared is not None:
        return await dry_run_reply(deps, prepared, args.model)
    request = PromptRequest(
        tool=call.tool,
        prompt=prepared.text if prepared is not None else prompt,
        inline=prepared is None,  # prepared: inlined already, and a packed file's `@` is its text
        model=args.model,
        effort=args.effort,
        mode=args.mode,
        add_dirs=args.add_dirs,
        conversation_id=args.conversation_id,
        agent=args.agent,
        allow_slash_commands=args.allow_slash_commands,
        skip_permissions=args.skip_permissions,
        sandbox=args.sandbox,
        explicit=frozenset(args.model_fields_set),
        guard_writes=args.change_mode,
        timeout_seconds=args.timeout_seconds,
        continue_latest=args.continue_latest,
        images=await gather_images(deps, args.images),
    )
    own = prepared.notices if prepared is not None else ()
    meta = _context_meta(prepared)
    if args.isolation == "worktree":
        conflicts = {"changeMode": args.change_mode, "jsonSchema": schema is not None, "outputFile": bool(target)}
        worktree = await isolate(deps, deps.settings.project_root, conflicts)
        result, changes = await run_isolated(deps, call, request, worktree)
        meta = {**(meta or {}), "worktree": worktree_data(worktree, changes)}
        done = result.outcome
        usage = done.usage if args.include_usage else None
        text = gemini_reply(done.text, notices=own + result.notices, conversation_id=done.conversation_id, usage=usage)
        return paginate(deps, f"{text}\n\n{worktree_text(worktree, changes)}", meta)
    if schema is not None:
        answer = await run_structured(deps, call, request, schema)
        notices = own + answer.notices
        if args.max_response_length is not None:
            notices += ("maxResponseLength does not apply to a jsonSchema answer; it was ignored.",)
        data = answer_data(value=answer.value, has_value=True, conversation_id=answer.conversation_id)
        body, written = (
            (answer.text, False) if target is None else write_output(target, answer.text, overwrite=args.overwrite)
        )
        if written:
            meta = {**(meta or {}), "outputFile": str(target)}
        return Reply(
            with_notices(notices, f"{RESPONSE_PREFIX}\n{body}"),
            meta,
            structured=data,
            receipts=answer.receipts,
            receipt_line=False,  # a JSON answer carries no trailing markers (the data has the receipt)
        )
    result = await run_prompt(deps, call, request)
    outcome = result.outcome
    if args.change_mode:
        reply = replace(
            _changemode_reply(deps, outcome, own + result.notices, index, result.writes), receipts=result.receipts
        )
        return replace(reply, meta={**(reply.meta or {}), **(meta or {})}) if meta else reply
    body, written = (
        (outcome.text, False) if target is None else write_output(target, outcome.text, overwrite=args.overwrite)
    )
    if written:
        meta = {**(meta or {}), "outputFile": str(target)}
    text = gemini_reply(
        body,
        notices=own + result.notices,
        conversation_id=outcome.conversation_id,
        usage=outcome.usage if args.include_usage else None,
    )
    reply = replace(paginate(deps, text, meta), receipts=result.receipts)
    data = answer_data(usage=outcome.usage, conversation_id=outcome.conversation_id) if args.include_usage else None
    return replace(reply, structured=data) if data else reply


def _context_meta(prepared: Prepared | None) -> dict[str, object] | None:
    if prepared is None or prepared.packed is None:
        return None
    return {"context": context_meta(prepared.packed, prepared.counter_model)}


UNGUARDED = "off: {root} is not a git working tree (or git is missing); writes the agent made could not be detected"


def _changemode_reply(
    deps: Deps, outcome: RunResult, notices: tuple[str, ...], index: int | None, writes: WriteCheck | None
) -> Reply:
    if writes is not None and not writes.clean:
        return _withheld(outcome, notices, writes)
    edits = parse_edits(outcome.text, deps.settings.project_root)
    if not edits:
        return Reply(with_notices(notices, no_edits_text(outcome.text)))
    bodies = render_edits(edits)
    key = deps.chunks.put(bodies, CHANGEMODE_CHUNK_KIND) if len(bodies) > 1 else None
    chosen = min(index or 1, len(bodies))
    text = bodies[chosen - 1] + changemode_footer(chosen, len(bodies), key)
    meta: dict[str, object] = {"edits": edits_as_meta(edits)}
    if writes is None:  # 000 answers outside git too (seed 002 refuses): _meta says the guard was off, and why
        meta["writeGuard"] = UNGUARDED.format(root=deps.settings.project_root)
    if key is not None:
        meta.update(chunked=True, chunkCacheKey=key, chunkIndex=chosen, totalChunks=len(bodies))
    return Reply(with_notices(notices, text), meta)


def _withheld(outcome: RunResult, notices: tuple[str, ...], writes: WriteCheck) -> Reply:
    """The agent wrote to the tree (or that could not be ruled out): its edits may be half-applied already."""
    warning = f"{writes.describe()}. Its edits were withheld: they may already be (partly) applied."
    body = (
        "changeMode edits withheld. Check `git status` / `git diff` for what the agent changed before applying "
        "anything.\n\n[Gemini's answer, for reference only]\n" + outcome.text
    )
    meta = {"appliedWrites": writes.error is None, "changedFiles": list(writes.changed)}
    return Reply(with_notices((warning, *notices), body), meta)


def _chunk_index(raw: int | str | None) -> int | None:
    if raw is None:
        return None
    try:
        value = int(raw)
    except ValueError:
        raise InputError(f"chunkIndex must be a whole number, not {raw!r}") from None
    if value < 1:
        raise InputError("chunkIndex must be 1 or more")
    return value


DOC = Doc(
    "Ask Google Gemini: questions, code review, analysis, edits, JSON. For a phased plan use gemini-plan, for "
    "ideas gemini-brainstorm.",
    prompt="Ask Gemini a question or hand it a review, with optional model, effort, mode and schema.",
    when=When(10, "questions, analysis, reviews and edits; @path sends project files along"),
)
TOOL = ToolDef("gemini-ask", AskInput, ask, Effect.WRITES, DOC, output_schema=ANSWER_SCHEMA)
