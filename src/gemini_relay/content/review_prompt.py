"""gemini-review's pure parts: the depth, its timeout, the prompt from the editable templates, and the wording of
partial (timed-out) and capacity-failed reviews. Timeouts follow gemini-mcp-bridge's review tool."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from gemini_relay.backends.capacity import CapacityFailure
from gemini_relay.content.changemode import fill_template, load_template
from gemini_relay.content.git_diff import DiffSpec, DiffStat

__all__ = [
    "HARD_TIMEOUT_CAP",
    "MAX_DIFF_BYTES",
    "ReviewDepth",
    "ReviewTimeout",
    "build_review_prompt",
    "capacity_text",
    "length_limit",
    "resolve_depth",
    "review_timeout",
    "strip_preamble",
    "timeout_hint",
]

ReviewDepth = Literal["scan", "focused", "deep"]

SCAN_TIMEOUT = 180.0  # diff only: independent of its size
FOCUSED_BASE, FOCUSED_PER_FILE, FOCUSED_CAP = 120.0, 15.0, 300.0
DEEP_BASE, DEEP_PER_FILE = 240.0, 45.0
HARD_TIMEOUT_CAP = 30 * 60.0
# ~250K tokens: room for the files a focused or deep review reads, inside every current Gemini context window.
MAX_DIFF_BYTES = 1024 * 1024
_TEMPLATES: dict[ReviewDepth, str] = {
    "scan": "review-scan.md",
    "focused": "review-focused.md",
    "deep": "review-deep.md",
}
_PREAMBLE = re.compile(
    r"^(?:I'll|I will|I'm going to|I am going to|I need to|I've|I have|Let me|Let's|Okay|OK[,.]|Alright|Sure|"
    r"(?:First|Now|Next),? (?:I|let)|To review)\b",
    re.IGNORECASE,
)
_FINDING = re.compile(r"severity|no significant findings", re.IGNORECASE)
_PREAMBLE_MAX = 400  # a paragraph longer than this is content, whatever its first words


@dataclass(frozen=True)
class ReviewTimeout:
    seconds: float
    scaled: bool  # derived from the diff size (focused and deep without an explicit timeout)
    notice: str | None = None


def resolve_depth(depth: ReviewDepth | None, quick: bool | None) -> ReviewDepth:
    """`depth` wins; the deprecated `quick` maps true -> scan, false -> deep; the default is deep."""
    if depth is not None:
        return depth
    return "scan" if quick else "deep"


def review_timeout(depth: ReviewDepth, files: int, explicit: float | None, ceiling: float) -> ReviewTimeout:
    """The run's deadline: an explicit timeout wins; else scaled by depth and file count. Never above `ceiling`.

    `ceiling` is the smaller of the 30-minute hard cap and the server's GEMINI_MCP_TIMEOUT.
    """
    cap = min(HARD_TIMEOUT_CAP, ceiling)
    if explicit is not None:
        if explicit > cap:
            return ReviewTimeout(cap, False, f"timeout {_secs(explicit)}s was capped at {_secs(cap)}s.")
        return ReviewTimeout(explicit, False)
    match depth:
        case "scan":
            return ReviewTimeout(min(SCAN_TIMEOUT, cap), False)
        case "focused":
            return ReviewTimeout(min(FOCUSED_BASE + FOCUSED_PER_FILE * files, FOCUSED_CAP, cap), True)
        case "deep":
            return ReviewTimeout(min(DEEP_BASE + DEEP_PER_FILE * files, cap), True)


def length_limit(words: int | None) -> str:
    return f"Keep your response under {words} words." if words else ""


def build_review_prompt(
    depth: ReviewDepth, *, diff: str, spec: DiffSpec, focus: str | None, max_words: int | None, truncated: bool
) -> str:
    """The filled template. Values are substituted in one pass, so `{{x}}` inside the diff stays as it is."""
    source = spec.describe()
    if truncated:
        source += f"; the diff was cut at {MAX_DIFF_BYTES // 1024} KB, review what is shown"
    return fill_template(
        load_template(_TEMPLATES[depth]),
        {
            "DIFF": diff.rstrip("\n"),
            "DIFF_SOURCE": source,
            "DIFF_COMMAND": spec.command(),
            "FOCUS_SECTION": f"Pay special attention to: {focus}" if focus else "",
            "LENGTH_LIMIT": length_limit(max_words),
        },
    )


def strip_preamble(text: str) -> str:
    """Drop leading narration paragraphs ("I'll start by reading…") that the prompts forbid but models still write."""
    paragraphs = text.lstrip("\n").split("\n\n")
    kept = 0
    while kept < len(paragraphs) - 1:
        head = paragraphs[kept].strip()
        if len(head) > _PREAMBLE_MAX or not _PREAMBLE.match(head) or _FINDING.search(head):
            break
        kept += 1
    return "\n\n".join(paragraphs[kept:]) if kept else text


def timeout_hint(depth: ReviewDepth, seconds: float, stat: DiffStat) -> str:
    size = f"a {stat.files}-file diff (+{stat.insertions} / -{stat.deletions})"
    shallower = {"deep": 'depth "focused" or "scan"', "focused": 'depth "scan"', "scan": None}[depth]
    options = [o for o in (shallower, "a narrower diff (base)", "a larger timeout") if o]
    return (
        f"The {depth} review timed out after {_secs(seconds)}s on {size}; what follows are its partial findings. "
        f"For a complete review use {', '.join(options[:-1])} or {options[-1]}."
    )


def capacity_text(depth: ReviewDepth, failure: CapacityFailure) -> str:
    return (
        f"The {depth} review could not be completed: Gemini reported a capacity failure ({failure.describe()}).\n\n"
        "No retry or fallback model was tried, so the choice stays yours: retry later, or run a shallower review "
        '(depth "focused" or "scan") now.\n\n'
        f"Details: {failure.message}"
    )


def _secs(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:.1f}"
