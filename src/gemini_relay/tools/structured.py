"""Structured answers (gemini-ask's jsonSchema and gemini-structured): validated JSON or a clear error.

The schema is checked before anything runs. The answer (the backend's structured output, else the JSON value in the
reply text) is validated with format checks on; when it fails, one repair turn goes to the same conversation; when
that fails too, the call is an error listing the validation problems. Structured replies are never chunked and carry
no trailing markers (no conversation id, no usage line).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from gemini_relay.content.search import build_structured_prompt
from gemini_relay.content.structured import (
    MAX_SCHEMA_BYTES,
    NoJsonFound,
    StructuredOutputError,
    Validator,
    extract_json,
    failure_text,
    load_schema,
    make_validator,
    repair_prompt,
    validation_errors,
)
from gemini_relay.core.result import RunResult
from gemini_relay.errors import InputError
from gemini_relay.tools.common.context import Deps, Reply
from gemini_relay.tools.common.progress import CallProgress
from gemini_relay.tools.common.runner import PromptRequest, PromptResult, run_prompt
from gemini_relay.tools.review_schemas import StructuredInput

_SNIFF_BYTES = 8 * 1024
# The backends' own "how the schema travelled" notices; the relay validates every answer itself, so they are noise
# for gemini-structured (gemini-ask keeps them, as gemini-relay 1.2.0 did).
_TRANSPORT_NOTICE = "jsonSchema:"


@dataclass(frozen=True)
class StructuredAnswer:
    value: Any
    text: str  # the JSON as the reply carries it
    notices: tuple[str, ...]
    repaired: bool
    model: str | None


async def run_structured(
    deps: Deps, call: CallProgress, request: PromptRequest, schema: dict[str, Any]
) -> StructuredAnswer:
    """Run `request` with `schema`; raises StructuredOutputError when the answer stays invalid after one repair."""
    validator = make_validator(schema)
    first = await run_prompt(deps, call, replace(request, json_schema=schema))
    value, text, problems = _check(validator, first.outcome)
    if not problems:
        return StructuredAnswer(value, text, first.notices, False, _model(first))
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
    return StructuredAnswer(value, text, notices, True, _model(second))


async def structured(deps: Deps, args: StructuredInput, call: CallProgress) -> Reply:
    schema = load_schema(args.json_schema, field="schema", max_bytes=MAX_SCHEMA_BYTES)
    files = [_checked_file(deps.settings.project_root, f) for f in args.files or []]
    request = PromptRequest(
        tool=call.tool,
        prompt=build_structured_prompt(args.prompt, files),
        model=args.model,
        mode="plan",  # read-only: the answer is data, the agent has nothing to change
        explicit=frozenset(args.model_fields_set),
    )
    answer = await run_structured(deps, call, request, schema)
    notices = [n for n in answer.notices if not n.startswith(_TRANSPORT_NOTICE)]
    lines = [f"⚠️ {n}" for n in dict.fromkeys(notices)]
    body = "\n".join(lines) + "\n\n" + answer.text if lines else answer.text
    data = {"value": answer.value, "repaired": answer.repaired, "model": answer.model}
    return Reply(body, {"structured": True, "repaired": answer.repaired, "model": answer.model}, structured=data)


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


def _checked_file(root: Path, raw: str) -> str:
    """A `files` entry as a root-relative path to an existing text file; InputError otherwise (before any run)."""
    if not raw.strip() or any(ch.isspace() for ch in raw):
        raise InputError(f"files entry {raw!r} must be a path without spaces, relative to the project root")
    real_root = os.path.realpath(root)
    real = os.path.realpath(Path(real_root) / raw)
    if Path(raw).is_absolute() or raw.startswith("~") or not real.startswith(real_root.rstrip(os.sep) + os.sep):
        raise InputError(f"files entry {raw!r} is outside the project root {root}")
    path = Path(real)
    if not path.is_file():
        raise InputError(f"files entry {raw!r} is not a file in the project root")
    try:
        with path.open("rb") as handle:
            head = handle.read(_SNIFF_BYTES)
    except OSError as exc:
        raise InputError(f"files entry {raw!r} cannot be read: {exc.strerror}") from None
    if b"\0" in head:
        raise InputError(f"files entry {raw!r} is binary; gemini-structured takes text files only")
    return os.path.relpath(real, real_root).replace(os.sep, "/")
