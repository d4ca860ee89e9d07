"""The gemini-plan prompt: a read-only request for a step-by-step implementation plan."""

from __future__ import annotations

from gemini_relay.content._errors import ContentError

__all__ = ["build_plan_prompt"]

_INSTRUCTIONS = """## Instructions
This is a planning request only: produce a step-by-step implementation plan; do not modify files, run commands \
that change anything, or write the implementation itself.

1. Restate the goal in one or two sentences and list any assumptions you make.
2. Break the work into small, ordered steps. For each step name the files or components it touches and what changes.
3. Call out dependencies between steps, risks, edge cases and open questions.
4. Give the verification for each step: the tests to add or run and how to tell it worked.
5. Where precision matters, sketch signatures, schemas or pseudocode rather than full code.

Keep the plan concise and actionable, ready for an engineer or coding agent to execute."""


def build_plan_prompt(task: str, context: str | None = None) -> str:
    """Build the planning prompt; identical inputs always give identical text."""
    goal = task.strip()
    if not goal:
        raise ContentError("Please provide a task or goal to plan.")
    sections = ["# IMPLEMENTATION PLANNING REQUEST", "", "## Task", goal, ""]
    extra = (context or "").strip()
    if extra:
        sections += ["## Context & Constraints", extra, ""]
    sections += [_INSTRUCTIONS, "", "Write the plan now:"]
    return "\n".join(sections)
