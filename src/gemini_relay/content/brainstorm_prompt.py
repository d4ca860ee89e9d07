"""The gemini-brainstorm prompt: jamubc's "# BRAINSTORMING SESSION" text, one framework per methodology."""

from __future__ import annotations

from typing import Literal

from gemini_relay.content._errors import ContentError

__all__ = ["Methodology", "build_brainstorm_prompt", "methodology_instructions"]

Methodology = Literal["divergent", "convergent", "scamper", "design-thinking", "lateral", "auto"]

_FRAMEWORKS: dict[str, str] = {
    "divergent": """**Divergent Thinking Approach:**
- Generate maximum quantity of ideas without self-censoring
- Build on wild or seemingly impractical ideas
- Combine unrelated concepts for unexpected solutions
- Use "Yes, and..." thinking to expand each concept
- Postpone evaluation until all ideas are generated""",
    "convergent": """**Convergent Thinking Approach:**
- Focus on refining and improving existing concepts
- Synthesize related ideas into stronger solutions
- Apply critical evaluation criteria
- Prioritize based on feasibility and impact
- Develop implementation pathways for top ideas""",
    "scamper": """**SCAMPER Creative Triggers:**
- **Substitute:** What can be substituted or replaced?
- **Combine:** What can be combined or merged?
- **Adapt:** What can be adapted from other domains?
- **Modify:** What can be magnified, minimized, or altered?
- **Put to other use:** How else can this be used?
- **Eliminate:** What can be removed or simplified?
- **Reverse:** What can be rearranged or reversed?""",
    "design-thinking": """**Human-Centered Design Thinking:**
- **Empathize:** Consider user needs, pain points, and contexts
- **Define:** Frame problems from user perspective
- **Ideate:** Generate user-focused solutions
- **Consider Journey:** Think through complete user experience
- **Prototype Mindset:** Focus on testable, iterative concepts""",
    "lateral": """**Lateral Thinking Approach:**
- Make unexpected connections between unrelated fields
- Challenge fundamental assumptions
- Use random word association to trigger new directions
- Apply metaphors and analogies from other domains
- Reverse conventional thinking patterns""",
}

_AUTO = """**AI-Optimized Approach:**
{lead}
- Divergent exploration with domain-specific knowledge
- SCAMPER triggers and lateral thinking
- Human-centered perspective for practical value"""

_ANALYSIS = """
## Analysis Framework
For each idea, provide:
- **Feasibility:** Implementation difficulty (1-5 scale)
- **Impact:** Potential value/benefit (1-5 scale)
- **Innovation:** Uniqueness/creativity (1-5 scale)
- **Quick Assessment:** One-sentence evaluation
"""

_REVIEW_LINE = (
    "**Before finalizing, review the list: remove near-duplicates and ensure each idea satisfies the constraints.**"
)
_SCORE_LINES = "**Feasibility:** [1-5] | **Impact:** [1-5] | **Innovation:** [1-5]\n**Assessment:** [Brief evaluation]"


def methodology_instructions(methodology: str, domain: str | None = None) -> str:
    """The framework section for `methodology`; anything unknown falls back to `auto`, as in jamubc."""
    if methodology in _FRAMEWORKS:
        return _FRAMEWORKS[methodology]
    lead = (
        f"Given the {domain} domain, I'll apply the most effective combination of:"
        if domain
        else "I'll intelligently combine multiple methodologies:"
    )
    return _AUTO.format(lead=lead)


def build_brainstorm_prompt(
    prompt: str,
    methodology: Methodology = "auto",
    domain: str | None = None,
    constraints: str | None = None,
    existing_context: str | None = None,
    idea_count: int = 12,
    include_analysis: bool = True,
) -> str:
    """Build the brainstorming prompt (jamubc's text, blank lines of absent sections included)."""
    challenge = prompt.strip()
    if not challenge:
        raise ContentError("You must provide a valid brainstorming challenge or question to explore")
    if idea_count < 1:
        raise ContentError("ideaCount must be a positive integer")
    # Empty optional sections still leave their line, exactly like the template literal they come from.
    domain_line = (
        f"**Domain Focus:** {domain} - Apply domain-specific knowledge, terminology, and best practices."
        if domain
        else ""
    )
    constraints_line = f"**Constraints & Boundaries:** {constraints}" if constraints else ""
    context_line = f"**Background Context:** {existing_context}" if existing_context else ""
    sections = [
        "# BRAINSTORMING SESSION",
        "",
        "## Core Challenge",
        challenge,
        "",
        "## Methodology Framework",
        methodology_instructions(methodology, domain),
        "",
        "## Context Engineering",
        "*Use the following context to inform your reasoning:*",
        domain_line,
        constraints_line,
        context_line,
        "",
        "## Output Requirements",
        f"- Generate {idea_count} distinct, creative ideas",
        "- Each idea should be unique and non-obvious",
        "- Focus on actionable, implementable concepts",
        "- Use clear, descriptive naming",
        "- Provide brief explanations for each idea",
        "",
        _ANALYSIS if include_analysis else "",
        "",
        "## Format",
        "Present ideas in a structured format:",
        "",
        "### Idea [N]: [Creative Name]",
        "**Description:** [2-3 sentence explanation]",
        _SCORE_LINES if include_analysis else "",
        "",
        "---",
        "",
        _REVIEW_LINE,
        "",
        "Begin brainstorming session:",
    ]
    return "\n".join(sections)
