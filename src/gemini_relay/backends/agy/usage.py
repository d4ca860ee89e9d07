"""The zero-token quota probe `agy --output-format json -p /usage` -> quota groups with levels (agy.md §1.7).

Never with --disable-slash-commands: then /usage is a model prompt that spends ~22k tokens. If agy ever answers
with a model turn anyway, the reading says so (`disables`) and the cache (quota_cache.py) stops probing for good.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from gemini_relay.backends.agy.catalogs import EnvelopeError, parse_envelope, run_capture
from gemini_relay.backends.capabilities import QuotaGroupReading, QuotaReport, QuotaWindow
from gemini_relay.core.vocabulary import QuotaLevel
from gemini_relay.supervise.process import SpawnError

USAGE_TIMEOUT = 30.0  # the probe asks agy's backend; agy-mcp allows 30 s
# agy-mcp's defaults: under a quarter left is worth planning around; under 5 % is one or two big runs away from empty.
LOW_FRACTION = 0.25
CRITICAL_FRACTION = 0.05


@dataclass(frozen=True)
class Thresholds:
    """Below `low` a group is low, below `critical` critical (fractions; GEMINI_RELAY_USAGE_LOW / _CRITICAL)."""

    low: float = LOW_FRACTION
    critical: float = CRITICAL_FRACTION


DEFAULT_THRESHOLDS = Thresholds()


class UsageProbeError(EnvelopeError):
    """The probe failed or answered something that is not a usage envelope."""


class ModelTurnError(UsageProbeError):
    """agy treated /usage as a prompt (a model turn ran): never probe again in this process."""


@dataclass(frozen=True)
class QuotaBucket:
    id: str
    name: str
    window: str
    remaining_fraction: float
    reset_time: datetime | None

    def refilled(self, now: datetime) -> bool:
        return self.reset_time is not None and self.reset_time <= now

    def remaining_at(self, now: datetime) -> float:
        """A bucket past its reset time is full again, whatever the snapshot says."""
        return 1.0 if self.refilled(now) else self.remaining_fraction


@dataclass(frozen=True)
class QuotaGroup:
    name: str
    description: str
    buckets: tuple[QuotaBucket, ...]

    def binding(self, now: datetime) -> QuotaBucket | None:
        """The bucket with the least remaining: it is the one that stops runs."""
        return min(self.buckets, key=lambda b: b.remaining_at(now), default=None)

    def level(self, now: datetime, thresholds: Thresholds = DEFAULT_THRESHOLDS) -> QuotaLevel:
        bucket = self.binding(now)
        return level_for(bucket.remaining_at(now), thresholds) if bucket is not None else QuotaLevel.OK

    def describe(self, now: datetime, thresholds: Thresholds = DEFAULT_THRESHOLDS) -> str:
        """`Gemini Models: low — Five Hour Limit Remaining 20% left, resets 2026-10-02T16:59:24Z`."""
        bucket = self.binding(now)
        if bucket is None:
            return f"{self.name}: {QuotaLevel.OK.value}"
        left = f"{bucket.remaining_at(now) * 100:.3g}% left"
        resets = f", resets {_rfc3339(bucket.reset_time)}" if bucket.reset_time is not None else ""
        return f"{self.name}: {self.level(now, thresholds).value} — {bucket.name or bucket.id} {left}{resets}"

    def evaluated(self, now: datetime, thresholds: Thresholds) -> QuotaGroupReading:
        """The group as the quota tool and the `quota` field show it, with its level at `now`."""
        bucket = self.binding(now)
        remaining = max(0.0, min(1.0, bucket.remaining_at(now))) if bucket is not None else 1.0
        return QuotaGroupReading(
            name=self.name,
            description=self.description,
            level=self.level(now, thresholds),
            remaining_percent=math.floor(remaining * 100 + 1e-9),
            window=bucket.window if bucket is not None else "",
            reset_time=_rfc3339(bucket.reset_time) if bucket is not None and bucket.reset_time is not None else None,
            windows=tuple(
                QuotaWindow(
                    id=b.id,
                    name=b.name,
                    window=b.window,
                    remaining_fraction=b.remaining_fraction,
                    reset_time=_rfc3339(b.reset_time) if b.reset_time is not None else None,
                    refilled=b.refilled(now),
                )
                for b in self.buckets
            ),
        )

    def mentions_gemini(self) -> bool:
        return "gemini" in f"{self.name} {self.description}".lower()


def level_for(fraction: float, thresholds: Thresholds = DEFAULT_THRESHOLDS) -> QuotaLevel:
    if fraction <= 0:
        return QuotaLevel.EXHAUSTED
    if fraction < thresholds.critical:
        return QuotaLevel.CRITICAL
    if fraction < thresholds.low:
        return QuotaLevel.LOW
    return QuotaLevel.OK


def parse_usage(stdout: str) -> tuple[QuotaGroup, ...]:
    """Raises ModelTurnError when a model turn ran, UsageProbeError for anything else that is not usage data."""
    try:
        raw = json.loads(stdout)
    except ValueError:
        raw = None
    if isinstance(raw, dict):
        envelope: dict[str, Any] = raw
        command = envelope.get("command")
        name = command.get("name") if isinstance(command, dict) else None  # pyright: ignore[reportUnknownMemberType,reportUnknownVariableType]
        turns = envelope.get("num_turns")
        if name != "usage" and ((isinstance(turns, int) and turns > 0) or envelope.get("conversation_id")):
            raise ModelTurnError(
                "agy ran /usage as a model prompt (a model turn spent tokens) instead of answering it itself; "
                "the quota probe is disabled for this server process."
            )
    try:
        data = parse_envelope(stdout, "usage")
    except EnvelopeError as exc:
        raise UsageProbeError(str(exc)) from None
    groups = data.get("groups")
    if not isinstance(groups, list):
        raise UsageProbeError("agy's usage envelope has no command.data.groups list")
    parsed = tuple(_group(g) for g in groups if isinstance(g, dict))  # pyright: ignore[reportUnknownVariableType,reportUnknownArgumentType]
    if parsed and not any(g.buckets for g in parsed):
        raise UsageProbeError("agy's usage envelope lists quota groups but no bucket with a remaining fraction")
    return parsed


def group_for_model(groups: tuple[QuotaGroup, ...], model: str | None) -> QuotaGroup | None:
    """Only gemini models map to a group: the single one whose name or description mentions gemini."""
    if model is None or not model.lower().startswith(("gemini-", "gemini ")):
        return None
    matches = [g for g in groups if g.mentions_gemini()]
    return matches[0] if len(matches) == 1 else None


@dataclass(frozen=True)
class UsageReading:
    groups: tuple[QuotaGroup, ...] = ()
    error: str | None = None
    taken_at: float = 0.0  # time.monotonic() (the cache stamps it with its own clock)
    checked_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    disables: bool = False  # agy ran /usage as a model turn: never probe again in this process

    @property
    def ok(self) -> bool:
        return self.error is None

    def report(self, now: datetime, thresholds: Thresholds) -> QuotaReport:
        return QuotaReport(_rfc3339(self.checked_at), tuple(g.evaluated(now, thresholds) for g in self.groups))


async def probe_usage(binary: Path, env: Mapping[str, str], cwd: Path) -> UsageReading:
    """One probe; agy's failures come back as a reading with `error`, never raised."""
    now = time.monotonic()
    # Exactly this argv: --disable-slash-commands would turn /usage into a paid model prompt.
    argv = [str(binary), "--output-format", "json", "-p", "/usage"]
    try:
        result = await run_capture(argv, env, cwd, timeout=USAGE_TIMEOUT)
    except SpawnError as exc:
        return UsageReading(error=str(exc), taken_at=now)
    if result.returncode is None:
        return UsageReading(error=f"agy's /usage probe did not answer within {USAGE_TIMEOUT:g}s", taken_at=now)
    try:
        groups = parse_usage(result.stdout)
    except ModelTurnError as exc:
        return UsageReading(error=str(exc), taken_at=now, disables=True)
    except UsageProbeError as exc:
        detail = " ".join(result.stderr.split())[-300:]
        why = f"exit {result.returncode}: {detail}" if result.returncode != 0 and detail else str(exc)
        return UsageReading(error=f"agy's /usage probe failed ({why})", taken_at=now)
    return UsageReading(groups=groups, taken_at=now)


def _group(raw: dict[str, Any]) -> QuotaGroup:
    buckets: list[QuotaBucket] = []
    for bucket in raw.get("buckets") or []:
        if not isinstance(bucket, dict):
            continue
        fraction = bucket.get("remaining_fraction")  # pyright: ignore[reportUnknownMemberType,reportUnknownVariableType]
        if isinstance(fraction, bool) or not isinstance(fraction, int | float):
            continue  # a disabled bucket has no fraction (agy 1.0.8+)
        buckets.append(
            QuotaBucket(
                id=_text(bucket.get("id")),  # pyright: ignore[reportUnknownMemberType]
                name=_text(bucket.get("name")),  # pyright: ignore[reportUnknownMemberType]
                window=_text(bucket.get("window")),  # pyright: ignore[reportUnknownMemberType]
                remaining_fraction=float(fraction),
                reset_time=_time(bucket.get("reset_time")),  # pyright: ignore[reportUnknownMemberType]
            )
        )
    return QuotaGroup(_text(raw.get("name")), _text(raw.get("description")), tuple(buckets))


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def _time(value: object) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def _rfc3339(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
