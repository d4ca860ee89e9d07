"""The reliability suite's short mode: every category attacks the real server and every figure is at its goal.

One test per category (`python -m bench.reliability --short --only <category>`), so the workers share them out.
Wall-clock goals are the bench's to judge (`python -m bench.reliability`): here they are printed, not asserted,
so a loaded CI machine cannot fail the suite on a latency."""

from __future__ import annotations

import subprocess
import sys

import pytest

from bench.reliability.__main__ import CATEGORIES
from bench.reliability.table import at_most, informative
from tests.harness import REPO, gemini_binary

SHORT_BOUND = 300  # one category's short run takes under a minute here; the bound only stops a wedged run


@pytest.mark.parametrize("category", list(CATEGORIES))
def test_each_category_of_the_short_reliability_run_prints_every_figure_at_its_goal(category: str) -> None:
    gemini_binary()  # the pinned CLI must be installed: its absence is a setup error
    command = [sys.executable, "-m", "bench.reliability", "--short", "--timings-informative", "--only", category]
    run = subprocess.run(command, cwd=REPO, capture_output=True,
                         text=True, timeout=SHORT_BOUND, check=False)  # fmt: skip
    assert "| category" in run.stdout, run.stderr[-2000:]
    figures = [line for line in run.stdout.splitlines() if line.startswith("| ") and "| category" not in line]
    assert figures, run.stdout  # the category ran and reported
    assert run.returncode == 0, run.stdout[-4000:]
    assert "❌" not in run.stdout


def test_a_missed_wall_clock_goal_is_shown_but_fails_nothing_when_timings_are_informative() -> None:
    missed = at_most("http-floods", "its latency", 1.05, 1.0, " s", timed=True)
    untimed = at_most("http-floods", "connections held", 600, 512)
    assert not missed.ok
    shown = informative(missed)
    assert shown.ok
    assert "⏱ missed" in shown.goal
    assert informative(untimed) is untimed
    assert not informative(untimed).ok
