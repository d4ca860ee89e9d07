"""Token-aware context packing: whole files, in a chosen order, up to a token budget, with every file left out named.

Pure: it takes the files already read and a counter (the API's countTokens, or None for the documented estimate of
core/tokens.py). A file is never split: one that does not fit is left out whole and named with its reason.

With a counter the files are packed by estimate first and the packed context is counted; when the count passes the
budget, the observed tokens-per-estimated-token ratio scales every estimate and the files are packed again (at most
MAX_COUNT_CALLS counts). Whatever the counter says, the context returned is within the budget: when the last count is
still over, files are dropped from the end of the packing until the scaled estimate fits, and if no count confirms
that, the context is left empty rather than over budget.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum

from gemini_relay.core.tokens import TokenCount, TokenMethod, estimate_tokens

__all__ = [
    "MAX_COUNT_CALLS",
    "Counter",
    "LeftOut",
    "LeftOutReason",
    "PackOrder",
    "Packed",
    "Piece",
    "file_block",
    "ordered",
    "pack",
]

MAX_COUNT_CALLS = 4  # countTokens calls per packing: the ratio converges in one or two for real tokenizers
_MARGIN = 1.02  # a rescale aims 2% under the budget, so one more round is rarely needed

Counter = Callable[[str], Awaitable[int]]


class PackOrder(StrEnum):
    """Which files get the budget first."""

    SMALLEST_FIRST = "smallest-first"  # the most files within the budget
    GIVEN = "given"  # the caller's order: `files` entries as listed, each glob's matches in path order


class LeftOutReason(StrEnum):
    """Why a matched file is not in the context."""

    OVER_BUDGET = "over the token budget"
    TOO_LARGE = "larger than the per-file limit"
    BINARY = "binary"
    NOT_UTF8 = "not UTF-8 text"
    UNREADABLE = "unreadable"
    SKIPPED = "not a regular file, a secret, or a link out of the project"


@dataclass(frozen=True)
class Piece:
    """One matched file, read whole: `block` is what goes into the prompt (delimited, labelled)."""

    label: str
    block: str
    size: int  # bytes on disk

    @property
    def estimate(self) -> int:
        return estimate_tokens(self.block)


@dataclass(frozen=True)
class LeftOut:
    label: str
    reason: LeftOutReason
    tokens: int | None = None  # its estimate, when it was read

    def describe(self) -> str:
        size = f", ~{self.tokens:,} tokens" if self.tokens is not None else ""
        return f"{self.label} ({self.reason.value}{size})"


@dataclass(frozen=True)
class Packed:
    text: str  # the packed blocks, joined: what the prompt gets
    files: tuple[str, ...]  # in the context, in packing order
    left_out: tuple[LeftOut, ...]
    count: TokenCount  # of `text`
    budget: int
    counts: int = 0  # countTokens calls made
    count_error: str | None = None  # why the counter could not be used (the count is then the estimate)


def file_block(label: str, content: str) -> str:
    """The same delimiters `@` inlining uses, so the model reads one convention."""
    return f"----- BEGIN FILE: {label} -----\n{content}\n----- END FILE: {label} -----"


def ordered(pieces: Sequence[Piece], order: PackOrder) -> list[Piece]:
    if order is PackOrder.GIVEN:
        return list(pieces)
    return sorted(pieces, key=lambda p: (p.estimate, p.label))


_SEPARATOR = "\n\n"
_SEPARATOR_TOKENS = estimate_tokens(_SEPARATOR)


def _greedy(pieces: Sequence[Piece], budget: int, ratio: float) -> tuple[list[Piece], list[Piece]]:
    """Each piece in turn while its scaled estimate fits what is left; a piece that does not fit is skipped whole."""
    kept: list[Piece] = []
    over: list[Piece] = []
    spent = 0
    for piece in pieces:
        cost = math.ceil((piece.estimate + (_SEPARATOR_TOKENS if kept else 0)) * ratio)
        if spent + cost <= budget:
            kept.append(piece)
            spent += cost
        else:
            over.append(piece)
    return kept, over


def _text(pieces: Sequence[Piece]) -> str:
    return _SEPARATOR.join(p.block for p in pieces)


async def pack(
    pieces: Sequence[Piece],
    budget: int,
    order: PackOrder,
    *,
    left_out: Sequence[LeftOut] = (),
    counter: Counter | None = None,
) -> Packed:
    """The pieces that fit `budget` (tokens), in `order`; `left_out`: files already excluded before reading.

    `counter` raising RunFailed (or OSError) falls back to the estimate, and `count_error` says why.
    """
    queue = ordered(pieces, order)
    ratio = 1.0
    kept, over = _greedy(queue, budget, ratio)
    if counter is None:
        return _result(kept, over, left_out, TokenCount(estimate_tokens(_text(kept)), TokenMethod.ESTIMATED), budget)
    counts = 0
    while True:
        text = _text(kept)
        if not kept:
            return _result(kept, over, left_out, TokenCount(0, TokenMethod.COUNTED), budget, counts)
        try:
            tokens = await counter(text)
        except Exception as exc:  # noqa: BLE001 - any failure of the counter means: use the labelled estimate
            kept, over = _greedy(queue, budget, 1.0)
            estimate = TokenCount(estimate_tokens(_text(kept)), TokenMethod.ESTIMATED)
            return _result(kept, over, left_out, estimate, budget, counts, str(exc) or type(exc).__name__)
        counts += 1
        if tokens <= budget:
            return _result(kept, over, left_out, TokenCount(tokens, TokenMethod.COUNTED), budget, counts)
        if counts >= MAX_COUNT_CALLS:
            # Out of counts: nothing unconfirmed goes out over the budget.
            return _result([], queue, left_out, TokenCount(0, TokenMethod.COUNTED), budget, counts)
        ratio = max(tokens / max(estimate_tokens(text), 1), ratio) * _MARGIN  # observed tokens per estimated one
        kept, over = _greedy(queue, budget, ratio)


def _result(
    kept: Sequence[Piece],
    over: Sequence[Piece],
    left_out: Sequence[LeftOut],
    count: TokenCount,
    budget: int,
    counts: int = 0,
    error: str | None = None,
) -> Packed:
    excluded = [LeftOut(p.label, LeftOutReason.OVER_BUDGET, p.estimate) for p in over]
    return Packed(
        text=_text(kept),
        files=tuple(p.label for p in kept),
        left_out=(*left_out, *excluded),
        count=count,
        budget=budget,
        counts=counts,
        count_error=error,
    )
