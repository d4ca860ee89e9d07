"""gemini-structured: JSON that satisfies a JSON Schema, validated, repaired once, or an error listing the problems."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pydantic import Field

from gemini_relay.content.json_schema import MAX_SCHEMA_BYTES, load_schema
from gemini_relay.content.search_prompt import build_structured_prompt
from gemini_relay.core.vocabulary import Effect, Toolset
from gemini_relay.errors import InputError
from gemini_relay.tools.common import output_schemas as out
from gemini_relay.tools.common.context import Deps, Reply
from gemini_relay.tools.common.controls import timeout_field
from gemini_relay.tools.common.definition import Doc, ToolDef, When
from gemini_relay.tools.common.inputs import PathText, ToolInput
from gemini_relay.tools.common.progress import CallProgress
from gemini_relay.tools.common.prompt_run import PromptRequest
from gemini_relay.tools.common.structured_answer import run_structured
from gemini_relay.tools.review.review_inputs import WORKING_DIRECTORY

MAX_FILES = 20
_SNIFF_BYTES = 8 * 1024
# The backends' own "how the schema travelled" notices; the relay validates every answer itself, so they are noise
# for gemini-structured (gemini-ask keeps them, as gemini-relay 1.2.0 did).
_TRANSPORT_NOTICE = "jsonSchema:"


class StructuredInput(ToolInput):
    prompt: str = Field(min_length=1, description="What to produce. @path references work as in gemini-ask.")
    json_schema: str | dict[str, Any] = Field(
        alias="schema",
        description=f"The JSON Schema the answer must satisfy: an object, or its JSON text (at most "
        f"{MAX_SCHEMA_BYTES // 1024} KB). Checked before anything runs.",
    )
    files: list[PathText] | None = Field(
        None,
        max_length=MAX_FILES,
        description=f"Up to {MAX_FILES} text files (paths inside the working directory) sent along with the prompt.",
    )
    model: str | None = Field(None, description="Model id or alias ('flash', 'pro'); unset: the backend default.")
    timeout_seconds: float | None = timeout_field()
    working_directory: str | None = Field(None, min_length=1, max_length=4096, description=WORKING_DIRECTORY)


async def structured(deps: Deps, args: StructuredInput, call: CallProgress) -> Reply:
    schema = load_schema(args.json_schema, field="schema", max_bytes=MAX_SCHEMA_BYTES)
    root = deps.resolve_cwd(args.working_directory, "workingDirectory")
    where = "the working directory" if args.working_directory is not None else "the project root"
    files = [_checked_file(root, f, where) for f in args.files or []]
    request = PromptRequest(
        tool=call.tool,
        prompt=build_structured_prompt(args.prompt, files),
        model=args.model,
        mode="plan",  # read-only: the answer is data, the agent has nothing to change
        timeout_seconds=args.timeout_seconds,
        explicit=frozenset(args.model_fields_set),
        cwd=root,  # @ references are jailed to it too
    )
    answer = await run_structured(deps, call, request, schema)
    notices = list(dict.fromkeys(n for n in answer.notices if not n.startswith(_TRANSPORT_NOTICE)))
    lines = [f"⚠️ {n}" for n in dict.fromkeys(notices)]
    body = "\n".join(lines) + "\n\n" + answer.text if lines else answer.text
    data = {"value": answer.value, "repaired": answer.repaired, "model": answer.model, "notices": notices}
    if answer.conversation_id:
        data["conversationId"] = answer.conversation_id
    meta = {"structured": True, "repaired": answer.repaired, "model": answer.model}
    return Reply(body, meta, structured=data, receipts=answer.receipts, receipt_line=False)  # the text is the JSON


def _checked_file(root: Path, raw: str, where: str) -> str:
    """A `files` entry as a root-relative path (root: the working directory) to an existing text file; InputError
    otherwise (before any run)."""
    if not raw.strip() or any(ch.isspace() for ch in raw):
        raise InputError(f"files entry {raw!r} must be a path without spaces, relative to {where}")
    real_root = os.path.realpath(root)
    real = os.path.realpath(Path(real_root) / raw)
    if Path(raw).is_absolute() or raw.startswith("~") or not real.startswith(real_root.rstrip(os.sep) + os.sep):
        raise InputError(f"files entry {raw!r} is outside {where} {root}")
    path = Path(real)
    if not path.is_file():
        raise InputError(f"files entry {raw!r} is not a file in {where}")
    try:
        with path.open("rb") as handle:
            head = handle.read(_SNIFF_BYTES)
    except OSError as exc:
        raise InputError(f"files entry {raw!r} cannot be read: {exc.strerror}") from None
    if b"\0" in head:
        raise InputError(f"files entry {raw!r} is binary; gemini-structured takes text files only")
    return os.path.relpath(real, real_root).replace(os.sep, "/")


DOC = Doc(
    "Get JSON that satisfies a JSON Schema: the schema is checked first, the answer is validated (formats "
    "included), one repair turn fixes an invalid answer, and a still-invalid answer is an error listing the "
    "problems. Optional text files go along. Read-only; the reply is the JSON alone.",
    prompt="Generate JSON that validates against a schema.",
    when=When(70, "JSON validated against your schema"),
)
TOOL = ToolDef(
    "gemini-structured",
    StructuredInput,
    structured,
    Effect.ASKS,
    DOC,
    toolset=Toolset.REVIEW,
    output_schema=out.STRUCTURED,
)
