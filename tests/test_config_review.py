"""Settings added with the review toolset: pacing and the queue wait limit (the fallback model: test_registry.py)."""

from __future__ import annotations

from pathlib import Path

from gemini_relay.config import Settings
from gemini_relay.core.pacing import PacingPolicy


def settings(tmp_path: Path, **env: str) -> Settings:
    return Settings.from_env({"GEMINI_RELAY_PROJECT_ROOT": str(tmp_path), **env})


def test_pacing_defaults_to_no_gap_a_200_ms_jitter_and_a_ten_minute_queue_wait(tmp_path: Path) -> None:
    # A cold server without the host: many such servers' starts are spread by the jitter (a warm run boots nothing).
    cold = settings(tmp_path, GEMINI_RELAY_HOST="off", GEMINI_RELAY_WARM="off")
    assert cold.pacing() == PacingPolicy(min_gap=0.0, jitter=0.2, max_wait=600.0)


def test_with_the_relay_host_the_start_jitter_defaults_to_none_and_an_explicit_one_still_wins(tmp_path: Path) -> None:
    assert settings(tmp_path).pacing() == PacingPolicy(min_gap=0.0, jitter=0.0, max_wait=600.0)
    assert settings(tmp_path, GEMINI_RELAY_JITTER_MS="150").pacing().jitter == 0.15


def test_pacing_reads_milliseconds_and_seconds(tmp_path: Path) -> None:
    made = settings(tmp_path, GEMINI_RELAY_MIN_GAP_MS="1500", GEMINI_RELAY_JITTER_MS="0", GEMINI_RELAY_QUEUE_WAIT="45")
    assert made.pacing() == PacingPolicy(min_gap=1.5, jitter=0.0, max_wait=45.0)
    assert settings(tmp_path, GEMINI_RELAY_QUEUE_WAIT="none").pacing().max_wait is None
