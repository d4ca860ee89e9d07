"""The figures a reliability run prints: one row each, its value beside its goal, and what broke it."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Figure:
    category: str
    name: str
    value: int | float | str
    goal: str  # how the value reads against its goal: "= 0", "≥ 1000", "printed"
    ok: bool
    findings: list[str] = field(default_factory=list[str])  # each offence, precisely: input and outcome
    timed: bool = False  # a wall-clock goal: it measures the machine as much as the relay


def informative(figure: Figure) -> Figure:
    """A timed figure that no longer fails: its goal is shown with ⏱ when missed (the test suite on loaded CI)."""
    if not figure.timed or figure.ok:
        return figure
    return Figure(figure.category, figure.name, figure.value, f"{figure.goal} ⏱ missed", True, figure.findings, True)


def zero(category: str, name: str, findings: list[str]) -> Figure:
    """A count that must be 0: the findings are the offences."""
    return Figure(category, name, len(findings), "= 0", not findings, findings)


def at_least(category: str, name: str, value: int, goal: int) -> Figure:
    return Figure(category, name, value, f"≥ {goal:,}", value >= goal)


def at_most(category: str, name: str, value: float, goal: float, unit: str = "", *, timed: bool = False) -> Figure:
    return Figure(category, name, f"{value:g}{unit}", f"≤ {goal:g}{unit}", value <= goal, timed=timed)


def printed(category: str, name: str, value: str) -> Figure:
    """A measurement with no pass mark (peak memory): shown, never failing."""
    return Figure(category, name, value, "printed", True)


def render(figures: list[Figure]) -> str:
    rows = [("category", "figure", "value", "goal", "")]
    rows += [(f.category, f.name, f"{f.value:,}" if isinstance(f.value, int) else str(f.value), f.goal,
              "✅" if f.ok else "❌") for f in figures]  # fmt: skip
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    lines = ["| " + " | ".join(cell.ljust(widths[i]) if i < 4 else cell for i, cell in enumerate(row)) + " |"
             for row in rows]  # fmt: skip
    lines.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|---|")
    return "\n".join(lines)


def findings_text(figures: list[Figure], limit: int = 8) -> str:
    out: list[str] = []
    for figure in figures:
        out += [f"  ! {figure.category} / {figure.name}: {finding}" for finding in figure.findings[:limit]]
        if len(figure.findings) > limit:
            out.append(f"  ! {figure.category} / {figure.name}: … {len(figure.findings) - limit} more")
    return "\n".join(out)
