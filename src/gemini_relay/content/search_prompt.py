"""gemini-search's pure parts: the grounded-search prompt from the editable template, and the source URLs an answer
cites. gemini-structured's prompt lives here too: both are filled from package templates in one safe pass."""

from __future__ import annotations

import re
from collections.abc import Sequence

from gemini_relay.content.changemode import fill_template, load_template
from gemini_relay.content.review_prompt import length_limit

__all__ = ["build_search_prompt", "build_structured_prompt", "source_urls"]

# The Gemini CLI's grounded search tool; agy has its own, so it gets the same instruction in plain words.
GEMINI_SEARCH_TOOL = "the google_web_search tool"
GENERIC_SEARCH_TOOL = "your web search tool"
_URL = re.compile(r"https?://[^\s<>()\[\]{}\"'`]+", re.IGNORECASE)
_TRAILING = ".,;:!?*_'\""


def build_search_prompt(query: str, *, search_tool: str, max_words: int | None) -> str:
    return fill_template(
        load_template("search.md"),
        {"QUERY": query, "SEARCH_TOOL": search_tool, "LENGTH_LIMIT": length_limit(max_words)},
    )


def build_structured_prompt(prompt: str, files: Sequence[str]) -> str:
    """The task plus `@` references for `files` (inlined by the runner, inside the project root only)."""
    listed = "## Files\n\n" + "\n".join(f"@{f}" for f in files) if files else ""
    return fill_template(load_template("structured.md"), {"PROMPT": prompt, "FILES": listed})


def source_urls(text: str) -> list[str]:
    """Every http(s) URL in `text`, in order of first appearance, without trailing punctuation or markdown."""
    found: dict[str, None] = {}
    for match in _URL.finditer(text):
        url = match.group(0).rstrip(_TRAILING)
        if url:
            found.setdefault(url, None)
    return list(found)
