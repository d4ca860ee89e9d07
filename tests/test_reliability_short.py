"""The reliability suite's short mode: every category attacks the real server and every figure is at its goal."""

from __future__ import annotations

import subprocess
import sys

from tests.harness import REPO, gemini_binary

SHORT_BOUND = 600  # the short mode takes about 3 minutes here; the bound only stops a wedged run


def test_the_short_reliability_run_prints_every_figure_at_its_goal() -> None:
    gemini_binary()  # the pinned CLI must be installed: its absence is a setup error
    run = subprocess.run([sys.executable, "-m", "bench.reliability", "--short"], cwd=REPO, capture_output=True,
                         text=True, timeout=SHORT_BOUND, check=False)  # fmt: skip
    assert "| category" in run.stdout, run.stderr[-2000:]
    assert run.returncode == 0, run.stdout[-4000:]
    assert "❌" not in run.stdout
