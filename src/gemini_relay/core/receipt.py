"""Receipt: what one run was, carried with its result so a model, a hook or a person can check the answer came
from that run — which backend and model served it, warm or cold, how long it queued, waited and took, its tokens.

The executor writes it when the run ends (jobs/engine/runners.py) and it travels inside RunResult's one codec, so a
stored job and an answer over the host's socket carry the same receipt. format.receipt_line is its text form.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from gemini_relay.core.events import Usage


@dataclass(frozen=True)
class Receipt:
    backend: str
    run_id: str
    model: str | None  # served, as the upstream reported it (else the one asked for, else None: its default)
    requested_model: str | None = None  # set only when the upstream served another model than this one
    effort: str | None = None
    job_id: str | None = None  # the stored job of the run (gemini-status collects it)
    conversation_id: str | None = None
    finish_reason: str = "SUCCESS"  # the upstream's own verdict
    partial: bool = False
    warm: bool | None = None  # a process already running served it; False: one started for it; None: no process
    queued_seconds: float = 0.0  # created → admitted by the executor's cap and pacing
    first_byte_seconds: float | None = None  # admitted → the upstream's first answer event (None: it sent none)
    total_seconds: float = 0.0  # created → ended
    tokens: Usage | None = None

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["tokens"] = asdict(self.tokens) if self.tokens is not None else None
        for key in ("queued_seconds", "first_byte_seconds", "total_seconds"):
            if data[key] is not None:
                data[key] = round(data[key], 3)
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Receipt:
        tokens = data.get("tokens")
        first = data.get("first_byte_seconds")
        return cls(
            backend=str(data.get("backend") or ""),
            run_id=str(data.get("run_id") or ""),
            model=data.get("model"),
            requested_model=data.get("requested_model"),
            effort=data.get("effort"),
            job_id=data.get("job_id"),
            conversation_id=data.get("conversation_id"),
            finish_reason=str(data.get("finish_reason") or "SUCCESS"),
            partial=bool(data.get("partial", False)),
            warm=data.get("warm"),
            queued_seconds=float(data.get("queued_seconds") or 0.0),
            first_byte_seconds=float(first) if first is not None else None,
            total_seconds=float(data.get("total_seconds") or 0.0),
            tokens=Usage(**tokens) if isinstance(tokens, dict) else None,
        )

    @property
    def token_count(self) -> int | None:
        """All tokens of the run: the upstream's total, else the sum of its parts."""
        usage = self.tokens
        if usage is None:
            return None
        return usage.total_tokens or usage.input_tokens + usage.output_tokens + usage.thinking_tokens
