"""Prompt builders: gemini-brainstorm (jamubc's text, exactly) and gemini-plan (read-only, deterministic)."""

from __future__ import annotations

import pytest

from gemini_relay.content._errors import ContentError
from gemini_relay.content.brainstorm_prompt import build_brainstorm_prompt, methodology_instructions
from gemini_relay.content.plan_prompt import build_plan_prompt

DEFAULT_PROMPT = """# BRAINSTORMING SESSION

## Core Challenge
How do we cut onboarding time?

## Methodology Framework
**AI-Optimized Approach:**
I'll intelligently combine multiple methodologies:
- Divergent exploration with domain-specific knowledge
- SCAMPER triggers and lateral thinking
- Human-centered perspective for practical value

## Context Engineering
*Use the following context to inform your reasoning:*




## Output Requirements
- Generate 12 distinct, creative ideas
- Each idea should be unique and non-obvious
- Focus on actionable, implementable concepts
- Use clear, descriptive naming
- Provide brief explanations for each idea


## Analysis Framework
For each idea, provide:
- **Feasibility:** Implementation difficulty (1-5 scale)
- **Impact:** Potential value/benefit (1-5 scale)
- **Innovation:** Uniqueness/creativity (1-5 scale)
- **Quick Assessment:** One-sentence evaluation


## Format
Present ideas in a structured format:

### Idea [N]: [Creative Name]
**Description:** [2-3 sentence explanation]
**Feasibility:** [1-5] | **Impact:** [1-5] | **Innovation:** [1-5]
**Assessment:** [Brief evaluation]

---

**Before finalizing, review the list: remove near-duplicates and ensure each idea satisfies the constraints.**

Begin brainstorming session:"""


def test_the_default_prompt_is_jamubcs_text_exactly() -> None:
    assert build_brainstorm_prompt("  How do we cut onboarding time?\n") == DEFAULT_PROMPT


def test_domain_constraints_and_context_fill_the_context_section() -> None:
    text = build_brainstorm_prompt(
        "Grow users", domain="fintech", constraints="budget < $10k", existing_context="tried referrals"
    )
    assert (
        "*Use the following context to inform your reasoning:*\n"
        "**Domain Focus:** fintech - Apply domain-specific knowledge, terminology, and best practices.\n"
        "**Constraints & Boundaries:** budget < $10k\n"
        "**Background Context:** tried referrals\n\n## Output Requirements"
    ) in text
    assert "Given the fintech domain, I'll apply the most effective combination of:" in text


@pytest.mark.parametrize(
    ("methodology", "heading"),
    [
        ("divergent", "**Divergent Thinking Approach:**"),
        ("convergent", "**Convergent Thinking Approach:**"),
        ("scamper", "**SCAMPER Creative Triggers:**"),
        ("design-thinking", "**Human-Centered Design Thinking:**"),
        ("lateral", "**Lateral Thinking Approach:**"),
        ("auto", "**AI-Optimized Approach:**"),
    ],
)
def test_each_methodology_brings_its_own_framework(methodology: str, heading: str) -> None:
    assert methodology_instructions(methodology).startswith(heading)
    assert f"## Methodology Framework\n{heading}\n" in build_brainstorm_prompt("x", methodology)  # type: ignore[arg-type]


def test_an_unknown_methodology_falls_back_to_auto() -> None:
    assert methodology_instructions("mystery") == methodology_instructions("auto")


def test_without_analysis_there_are_no_scores() -> None:
    text = build_brainstorm_prompt("x", include_analysis=False, idea_count=5)
    assert "Feasibility" not in text and "Analysis Framework" not in text
    assert "- Generate 5 distinct, creative ideas" in text
    assert "**Description:** [2-3 sentence explanation]\n\n\n---" in text


def test_a_blank_challenge_or_a_non_positive_idea_count_is_refused() -> None:
    with pytest.raises(ContentError, match="valid brainstorming challenge"):
        build_brainstorm_prompt("   ")
    with pytest.raises(ContentError, match="ideaCount"):
        build_brainstorm_prompt("x", idea_count=0)


def test_the_plan_prompt_is_read_only_and_deterministic() -> None:
    text = build_plan_prompt("  Add retries to the HTTP client ", None)
    assert text == build_plan_prompt("Add retries to the HTTP client", "")
    assert text.startswith("# IMPLEMENTATION PLANNING REQUEST\n\n## Task\nAdd retries to the HTTP client\n\n## Instr")
    assert "produce a step-by-step implementation plan; do not modify files" in text
    assert "## Context" not in text
    assert text.endswith("Write the plan now:")


def test_the_plan_prompt_carries_context_before_the_instructions() -> None:
    text = build_plan_prompt("Migrate the DB", "Postgres 16, zero downtime, see @docs/db.md")
    expected = "## Task\nMigrate the DB\n\n## Context & Constraints\nPostgres 16, zero downtime, see @docs/db.md\n\n"
    assert expected in text
    assert text.index("## Context") < text.index("## Instructions")


def test_a_blank_plan_task_is_refused() -> None:
    with pytest.raises(ContentError, match="task or goal"):
        build_plan_prompt(" \n", "context")
