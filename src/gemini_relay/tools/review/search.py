"""gemini-search: an answer from a live web search, with its source URLs listed (read-only)."""

from __future__ import annotations

from dataclasses import replace

from pydantic import Field

from gemini_relay.content.search_prompt import build_search_prompt, source_urls
from gemini_relay.core.vocabulary import Effect, Toolset
from gemini_relay.format import gemini_reply
from gemini_relay.tools.common.context import Deps, Reply
from gemini_relay.tools.common.controls import timeout_field
from gemini_relay.tools.common.definition import Doc, ToolDef, When
from gemini_relay.tools.common.inputs import ToolInput
from gemini_relay.tools.common.output_schemas import TEXT_ANSWER
from gemini_relay.tools.common.progress import CallProgress
from gemini_relay.tools.common.prompt_run import PromptRequest, paginate, run_prompt
from gemini_relay.tools.review.review_inputs import LENGTH_LIMIT, MAX_WORDS, WORKING_DIRECTORY

SOURCES_MARKER = "🔗 Sources:"


class SearchInput(ToolInput):
    query: str = Field(min_length=1, description="The question to research on the web.")
    model: str | None = Field(None, description="Model id or alias ('flash', 'pro'); unset: the backend default.")
    max_response_length: int | None = Field(None, ge=1, le=MAX_WORDS, description=LENGTH_LIMIT)
    timeout_seconds: float | None = timeout_field()
    working_directory: str | None = Field(None, min_length=1, max_length=4096, description=WORKING_DIRECTORY)


async def search(deps: Deps, args: SearchInput, call: CallProgress) -> Reply:
    tool = deps.registry.search_tool(deps.selection().backend)
    result = await run_prompt(
        deps,
        call,
        PromptRequest(
            tool=call.tool,
            prompt=build_search_prompt(args.query, search_tool=tool, max_words=args.max_response_length),
            model=args.model,
            mode="plan",  # read-only: searching needs no writes
            inline=False,  # a query is not a file reference
            timeout_seconds=args.timeout_seconds,
            explicit=frozenset(args.model_fields_set),
            cwd=deps.resolve_cwd(args.working_directory, "workingDirectory"),
        ),
    )
    outcome = result.outcome
    urls = source_urls(outcome.text)
    notices = list(result.notices)
    body = outcome.text
    if urls:
        body += f"\n\n{SOURCES_MARKER}\n" + "\n".join(f"- {url}" for url in urls)
    else:
        notices.append("The answer cites no source URLs; treat it as not grounded in a web search.")
    text = gemini_reply(body, notices=notices, conversation_id=outcome.conversation_id)
    reply = paginate(deps, text, {"sources": urls, "model": result.fallback_model or result.record.model})
    return replace(reply, receipts=result.receipts)


DOC = Doc(
    lambda upstream: (
        f"Answer a question from a live web search ({upstream.web_search}), with the source URLs listed. Read-only."
    ),
    prompt="Research a question on the web with Gemini and cite the sources.",
    when=When(60, "an answer from a live web search, with its sources"),
)
TOOL = ToolDef(
    "gemini-search", SearchInput, search, Effect.ASKS, DOC, toolset=Toolset.REVIEW, output_schema=TEXT_ANSWER
)
