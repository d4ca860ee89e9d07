"""gemini-ask: the general relay call (changeMode, jsonSchema, conversationId, chunk paging)."""

from __future__ import annotations

import json

from gemini_relay.content.changemode import (
    CHANGEMODE_CHUNK_KIND,
    changemode_footer,
    edits_as_meta,
    no_edits_text,
    parse_edits,
    render_edits,
    wrap_changemode,
)
from gemini_relay.errors import InputError
from gemini_relay.format import gemini_reply, with_notices
from gemini_relay.jobs.models import RunOutcome
from gemini_relay.tools.chunks import cached_chunk
from gemini_relay.tools.context import Deps, Reply
from gemini_relay.tools.progress import CallProgress
from gemini_relay.tools.runner import PromptRequest, run_prompt
from gemini_relay.tools.schemas import AskInput


async def ask(deps: Deps, args: AskInput, call: CallProgress) -> Reply:
    index = _chunk_index(args.chunk_index)
    if args.chunk_cache_key is not None:
        # Paging an earlier reply: no model turn.
        return Reply(cached_chunk(deps.chunks, args.chunk_cache_key, index or 1))
    prompt = wrap_changemode(args.prompt) if args.change_mode else args.prompt
    result = await run_prompt(
        deps,
        call,
        PromptRequest(
            tool=call.tool,
            prompt=prompt,
            model=args.model,
            effort=args.effort,
            mode=args.mode,
            json_schema=args.json_schema,
            add_dirs=args.add_dirs,
            conversation_id=args.conversation_id,
            agent=args.agent,
            allow_slash_commands=args.allow_slash_commands,
            skip_permissions=args.skip_permissions,
            sandbox=args.sandbox,
            explicit=frozenset(args.model_fields_set),
        ),
    )
    outcome = result.outcome
    if args.change_mode:
        return _changemode_reply(deps, outcome, result.notices, index)
    structured = args.json_schema is not None
    return Reply(
        gemini_reply(
            _answer_text(outcome, structured),
            notices=result.notices,
            conversation_id=None if structured else outcome.conversation_id,
            usage=outcome.usage if args.include_usage and not structured else None,
        )
    )


def _answer_text(outcome: RunOutcome, structured: bool) -> str:
    if structured and outcome.has_structured_output:
        return json.dumps(outcome.structured_output, ensure_ascii=False, indent=2)
    return outcome.text


def _changemode_reply(deps: Deps, outcome: RunOutcome, notices: tuple[str, ...], index: int | None) -> Reply:
    edits = parse_edits(outcome.text, deps.settings.project_root)
    if not edits:
        return Reply(with_notices(notices, no_edits_text(outcome.text)))
    bodies = render_edits(edits)
    key = deps.chunks.put(bodies, CHANGEMODE_CHUNK_KIND) if len(bodies) > 1 else None
    chosen = min(index or 1, len(bodies))
    text = bodies[chosen - 1] + changemode_footer(chosen, len(bodies), key)
    meta: dict[str, object] = {"edits": edits_as_meta(edits)}
    if key is not None:
        meta.update(chunked=True, chunkCacheKey=key, chunkIndex=chosen, totalChunks=len(bodies))
    return Reply(with_notices(notices, text), meta)


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
