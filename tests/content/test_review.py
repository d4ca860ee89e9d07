"""Review depth, timeouts, prompts from the shipped templates, preamble stripping, search and structured prompts."""

from __future__ import annotations

import pytest

from gemini_relay.backends.capacity import CapacityFailure
from gemini_relay.content.changemode import load_template
from gemini_relay.content.git_diff import DiffSpec, DiffStat
from gemini_relay.content.review_prompt import (
    HARD_TIMEOUT_CAP,
    build_review_prompt,
    capacity_text,
    resolve_depth,
    review_timeout,
    strip_preamble,
    timeout_hint,
)
from gemini_relay.content.search_prompt import build_search_prompt, build_structured_prompt, source_urls

DIFF = "diff --git a/t.md b/t.md\n+Hello {{NAME}} and {{DIFF}} and {{FOCUS_SECTION}}\n"
NO_LIMIT = 45 * 60.0


def test_depth_wins_over_quick_and_quick_maps_to_scan_or_deep() -> None:
    assert resolve_depth("focused", True) == "focused"
    assert resolve_depth(None, True) == "scan"
    assert resolve_depth(None, False) == "deep"
    assert resolve_depth(None, None) == "deep"


@pytest.mark.parametrize(
    ("depth", "files", "seconds"),
    [
        ("scan", 5, 180),
        ("scan", 500, 180),
        ("focused", 5, 195),
        ("focused", 15, 300),
        ("deep", 5, 465),
        ("deep", 15, 915),
        ("deep", 100, HARD_TIMEOUT_CAP),
    ],
)
def test_timeouts_scale_by_depth_and_file_count_as_the_bridge_does(depth: str, files: int, seconds: float) -> None:
    assert review_timeout(depth, files, None, NO_LIMIT).seconds == seconds  # type: ignore[arg-type]


def test_an_explicit_timeout_wins_but_is_capped_at_thirty_minutes_with_a_notice() -> None:
    assert review_timeout("deep", 50, 42, NO_LIMIT).seconds == 42
    capped = review_timeout("scan", 1, 3600, NO_LIMIT)
    assert capped.seconds == HARD_TIMEOUT_CAP
    assert capped.notice == "timeout 3600s was capped at 1800s."


def test_the_server_timeout_is_a_ceiling_for_scaled_timeouts_too() -> None:
    assert review_timeout("deep", 20, None, 600).seconds == 600
    assert review_timeout("deep", 20, None, 600).scaled
    assert not review_timeout("scan", 20, None, 600).scaled


@pytest.mark.parametrize("depth", ["scan", "focused", "deep"])
def test_a_diff_full_of_placeholders_reaches_the_prompt_verbatim(depth: str) -> None:
    prompt = build_review_prompt(
        depth,  # type: ignore[arg-type]
        diff=DIFF,
        spec=DiffSpec("main"),
        focus="the {{LENGTH_LIMIT}} path",
        max_words=300,
        truncated=False,
    )
    assert DIFF.rstrip("\n") in prompt
    assert "Pay special attention to: the {{LENGTH_LIMIT}} path" in prompt
    assert "Keep your response under 300 words." in prompt
    assert "main...HEAD" in prompt
    assert prompt.count("{{") == DIFF.count("{{") + 1  # only the user's own braces remain


def test_each_depth_prompt_asks_for_what_that_depth_does() -> None:
    def prompt(depth: str) -> str:
        return build_review_prompt(depth, diff=DIFF, spec=DiffSpec(), focus=None, max_words=None, truncated=True)  # type: ignore[arg-type]

    assert "do not open other files" in prompt("scan")
    assert "read the full current contents of each changed file" in prompt("focused")
    deep = prompt("deep")
    assert "AGENTS.md, GEMINI.md" in deep and "Follow new or changed imports" in deep and "tests" in deep
    assert "`git diff HEAD -U5`" in deep
    assert "the diff was cut at 1024 KB" in deep
    assert "Pay special attention" not in deep and "Keep your response" not in deep


def test_every_template_is_shipped_with_the_package() -> None:
    for name in ("review-scan.md", "review-focused.md", "review-deep.md", "search.md", "structured.md"):
        assert "{{" in load_template(name)


def test_leading_narration_is_dropped_but_findings_and_short_replies_stay() -> None:
    narrated = "I'll start by reading the diff.\n\nLet me check the tests.\n\n- **Severity**: warning\n- **File**: a.py"
    assert strip_preamble(narrated) == "- **Severity**: warning\n- **File**: a.py"
    assert strip_preamble("No significant findings.") == "No significant findings."
    assert strip_preamble("I have no concerns.") == "I have no concerns."  # never strip everything
    keep = "Okay, severity critical: the lock is never released.\n\nMore."
    assert strip_preamble(keep) == keep


def test_the_timeout_hint_offers_a_shallower_depth_except_for_scan() -> None:
    stat = DiffStat(7, 120, 30)
    deep = timeout_hint("deep", 465, stat)
    assert deep.startswith("The deep review timed out after 465s on a 7-file diff (+120 / -30)")
    assert 'depth "focused" or "scan"' in deep
    scan = timeout_hint("scan", 180, stat)
    assert "depth" not in scan.split("; ", 1)[1] and "a narrower diff (base) or a larger timeout" in scan


def test_the_capacity_text_names_the_failure_and_the_choices() -> None:
    failure = CapacityFailure("rate_limit", 429, "Too many requests")
    text = capacity_text("deep", failure)
    assert "capacity failure (rate limit, HTTP 429)" in text
    assert "No retry or fallback model was tried" in text and "Details: Too many requests" in text


def test_the_search_prompt_names_the_backend_search_tool_and_keeps_the_query_verbatim() -> None:
    prompt = build_search_prompt("what is {{QUERY}}?", search_tool="the google_web_search tool", max_words=None)
    assert "with the google_web_search tool" in prompt
    assert "what is {{QUERY}}?" in prompt
    assert "Sources:" in prompt and "{{LENGTH_LIMIT}}" not in prompt


def test_the_structured_prompt_references_the_files() -> None:
    prompt = build_structured_prompt("extract {{PROMPT}}", ["src/a.py", "b.md"])
    assert "extract {{PROMPT}}" in prompt and "@src/a.py\n@b.md" in prompt
    assert "{{FILES}}" not in build_structured_prompt("x", [])


def test_source_urls_are_deduplicated_in_order_without_trailing_punctuation() -> None:
    text = "See https://a.example/x. And (https://b.example/y?q=1) then https://a.example/x, and **https://c.io/z**"
    assert source_urls(text) == ["https://a.example/x", "https://b.example/y?q=1", "https://c.io/z"]
    assert source_urls("no links here") == []
