"""Structured answers (gemini-ask's jsonSchema and gemini-structured): validated JSON or a clear error.

The schema is checked before anything runs. The answer (the backend's structured output, else the JSON value in the
reply text) is validated with format checks on; when it fails, one repair turn goes to the same conversation; when
that fails too, the call is an error listing the validation problems. Structured replies are never chunked and carry
no trailing markers (no conversation id, no usage line).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Any

from gemini_relay.content.json_schema import (
    NoJsonFound,
    StructuredOutputError,
    Validator,
    extract_json,
    failure_text,
    make_validator,
    repair_prompt,
    validation_errors,
)
from gemini_relay.core.receipt import Receipt
from gemini_relay.core.result import RunResult
from gemini_relay.tools.common.context import Deps
from gemini_relay.tools.common.progress import CallProgress
from gemini_relay.tools.common.prompt_run import PromptRequest, PromptResult, run_prompt


@dataclass(frozen=True)
class StructuredAnswer:
    value: Any
    text: str  # the JSON as the reply carries it
    notices: tuple[str, ...]
    repaired: bool
    model: str | None
    conversation_id: str | None  # the thread the answer came from (the text carries none: it is the JSON alone)
    receipts: tuple[Receipt, ...]  # the run, and the repair turn's when there was one


async def run_structured(
    deps: Deps, call: CallProgress, request: PromptRequest, schema: dict[str, Any]
) -> StructuredAnswer:
    """Run `request` with `schema`; raises StructuredOutputError when the answer stays invalid after one repair."""
    validator = make_validator(schema)
    first = await run_prompt(deps, call, replace(request, json_schema=schema))
    value, text, problems = _check(validator, first.outcome)
    if not problems:
        thread = first.outcome.conversation_id
        return StructuredAnswer(value, text, first.notices, False, _model(first), thread, first.receipts)
    thread = first.outcome.conversation_id
    retry = replace(
        request,
        prompt=repair_prompt(problems, text, same_conversation=thread is not None),
        json_schema=schema,
        conversation_id=thread or request.conversation_id,
        inline=False,  # the repair text quotes the model, not the user's `@` references
        # A new conversation needs the task again; the repair turn then carries it with the errors.
    )
    if thread is None:
        retry = replace(retry, prompt=f"{request.prompt}\n\n{retry.prompt}", inline=request.inline)
    second = await run_prompt(deps, call, retry)
    value, text, problems = _check(validator, second.outcome)
    if problems:
        raise StructuredOutputError(failure_text(problems, text))
    notices = tuple(dict.fromkeys(first.notices + second.notices))
    thread = second.outcome.conversation_id or thread
    return StructuredAnswer(value, text, notices, True, _model(second), thread, first.receipts + second.receipts)


def _check(validator: Validator, outcome: RunResult) -> tuple[Any, str, list[str]]:
    """(value, its JSON text, problems); the backend's own structured output wins over the reply text."""
    if outcome.has_structured_output:
        value = outcome.structured_output
        return value, json.dumps(value, ensure_ascii=False, indent=2), validation_errors(validator, value)
    try:
        found = extract_json(outcome.text)
    except NoJsonFound:
        shown = outcome.text.strip() or "(an empty answer)"
        return None, shown, ["at $: the answer is not JSON"]
    return found.value, found.raw, validation_errors(validator, found.value)


def _model(result: PromptResult) -> str | None:
    return result.fallback_model or result.record.model or result.record.spec.model
