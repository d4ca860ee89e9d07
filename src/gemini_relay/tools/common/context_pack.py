"""`files` on a prompt tool: paths and globs packed whole within a token budget, and the words the answer says of it.

The prompt's own `@` references are inlined first (as run_prompt would), then the packed files are appended; the
run is then told not to inline again, so `@` inside a packed file stays text. Counting uses the API's countTokens
when a backend can count (a key is set), else the labelled estimate (core/tokens.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import anyio
from pydantic import Field

from gemini_relay.backends.capabilities import CountsTokens
from gemini_relay.backends.model_names import GEMINI_ALIASES
from gemini_relay.content.context_files import gather
from gemini_relay.content.inline import inline_references
from gemini_relay.content.packing import Counter, Packed, PackOrder, pack
from gemini_relay.core.tokens import TokenCount, TokenMethod, estimated
from gemini_relay.errors import RunFailed
from gemini_relay.tools.common.context import Deps
from gemini_relay.tools.common.inputs import PathText, ToolInput
from gemini_relay.tools.common.prompt_run import inline_notices

DEFAULT_TOKEN_BUDGET = 200_000  # inside every current Gemini context window, with room for the answer
MAX_TOKEN_BUDGET = 2_000_000
MAX_FILES_ENTRIES = 100
_LISTED = 20  # left-out files named in the text; _meta.context lists them all


# PackOrder's values, spelled out so the wire schema is a plain enum (a $ref would need $defs the wire drops);
# tests/tools/test_context_pack.py keeps the two equal.
PackOrderName = Literal["smallest-first", "given"]


class ContextOptions(ToolInput):
    """The packing controls a prompt tool adds to its input model."""

    files: list[PathText] | None = Field(
        None,
        min_length=1,
        max_length=MAX_FILES_ENTRIES,
        description="Project files, dirs or globs to send whole (within tokenBudget).",
    )
    token_budget: int | None = Field(
        None,
        ge=1,
        le=MAX_TOKEN_BUDGET,
        description=f"Tokens the files may take (default {DEFAULT_TOKEN_BUDGET:,}).",
    )
    pack_order: PackOrderName = Field(
        "smallest-first",
        description="'smallest-first': the most files fit; 'given': files' order.",
    )


@dataclass(frozen=True)
class Prepared:
    """The prompt as it will be sent, and what the answer says of its context."""

    text: str
    notices: tuple[str, ...]
    packed: Packed | None
    counter_model: str | None  # the model the API counted for; None: estimated
    count_for: CountsTokens | None  # None: estimated


async def prepare_prompt(
    deps: Deps, prompt: str, options: ContextOptions, model: str | None, *, inline: bool = True
) -> Prepared:
    """Inline `@` references of `prompt`, pack `options.files`, and append them.

    Raises:
        InputError: a `files` entry or an `@` reference leaves the project root (before anything is read or run).
    """
    root = deps.settings.project_root
    inlined = await anyio.to_thread.run_sync(inline_references, prompt, root) if inline else None
    text = inlined.text if inlined is not None else prompt
    notices = inline_notices(inlined) if inlined is not None else []
    counter = deps.registry.token_counter()
    counted_model = _count_model(deps, counter, model)
    packed = None
    if options.files:
        budget = options.token_budget or DEFAULT_TOKEN_BUDGET
        files, order = list(options.files), PackOrder(options.pack_order)
        gathered = await anyio.to_thread.run_sync(lambda: gather(files, root, budget, order))
        count = None if counter is None else _bound(counter, counted_model)
        packed = await pack(gathered.pieces, budget, order, left_out=gathered.left_out, counter=count)
        if gathered.unmatched:
            notices.append(f"files matched nothing: {', '.join(gathered.unmatched)}")
        notices.append(context_line(packed, counted_model))
        if packed.text:
            text = f"{text}\n\n{packed.text}"
    return Prepared(text, tuple(notices), packed, counted_model if counter is not None else None, counter)


def _bound(counter: CountsTokens, model: str | None) -> Counter:
    async def count(text: str) -> int:
        return await counter.count_tokens(text, model)

    return count


def _count_model(deps: Deps, counter: CountsTokens | None, model: str | None) -> str | None:
    """The call's model when the counter is the active backend; else the counter's own default."""
    if counter is None:
        return None
    if counter.name == deps.selection().backend and model:
        return model_id(model)
    return deps.registry.default_model(counter.name)


def model_id(model: str) -> str:
    """`flash` / `pro` as the model ids they stand for (what is counted and priced)."""
    return GEMINI_ALIASES.get(model.strip().lower(), model)


async def count_text(prepared: Prepared, text: str) -> tuple[TokenCount, str | None]:
    """`text` counted the way its context was (the API when it can, else the estimate), and why not when it failed."""
    counter = prepared.count_for
    if counter is None:
        return estimated(text), None
    try:
        return TokenCount(await counter.count_tokens(text, prepared.counter_model), TokenMethod.COUNTED), None
    except (RunFailed, OSError) as exc:
        return estimated(text), str(exc)


def method_label(count: TokenCount, model: str | None) -> str:
    if count.method is TokenMethod.COUNTED and model:
        return f"{count.method.label} for {model}"
    return count.method.label


def context_line(packed: Packed, model: str | None) -> str:
    """`Context: 12 file(s), 3,456 tokens (counted by the API …) of a 5,000-token budget; left out 2: …`."""
    count = packed.count
    line = (
        f"Context: {len(packed.files)} file(s), {count.tokens:,} tokens ({method_label(count, model)}) of a "
        f"{packed.budget:,}-token budget"
    )
    if packed.count_error:
        line += f"; the API could not count ({packed.count_error}), so this is the estimate"
    if not packed.left_out:
        return line + "; nothing left out."
    shown = ", ".join(item.describe() for item in packed.left_out[:_LISTED])
    more = (
        f", … and {len(packed.left_out) - _LISTED} more (all in _meta.context.leftOut)"
        if (len(packed.left_out) > _LISTED)
        else ""
    )
    return f"{line}; left out {len(packed.left_out)} whole: {shown}{more}."


def context_meta(packed: Packed, model: str | None) -> dict[str, Any]:
    return {
        "tokens": packed.count.tokens,
        "method": packed.count.method.value,
        "countedFor": model if packed.count.method is TokenMethod.COUNTED else None,
        "budget": packed.budget,
        "files": list(packed.files),
        "leftOut": [{"path": i.label, "reason": i.reason.value} for i in packed.left_out],
    }
