"""PacingPolicy: how runs are spaced out (a settings value; the Pacer in jobs/ applies it)."""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class PacingPolicy:
    """Seconds throughout. `max_wait=None` waits without limit."""

    min_gap: float = 0.0
    jitter: float = 0.0
    max_wait: float | None = None

    def __post_init__(self) -> None:
        for name in ("min_gap", "jitter"):
            value = getattr(self, name)
            if not math.isfinite(value) or value < 0:
                raise ValueError(f"{name} must be a finite number ≥ 0, got {value!r}")
        if self.max_wait is not None and (not math.isfinite(self.max_wait) or self.max_wait <= 0):
            raise ValueError(f"max_wait must be a finite number > 0, got {self.max_wait!r}")
