"""Vocabularies shared by the engine, the tools and the tests: closed enums, and the open set of backend names."""

from __future__ import annotations

from enum import StrEnum
from typing import NamedTuple, NewType


class RunState(StrEnum):
    """Where a run is in its life; terminal states never change again."""

    QUEUED = "queued"
    STARTING = "starting"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    CANCELLED = "cancelled"

    @property
    def terminal(self) -> bool:
        return self in _TERMINAL


_TERMINAL = frozenset({RunState.DONE, RunState.FAILED, RunState.CANCELLED})


class FailureReason(StrEnum):
    """Why a failed run failed. Small, stable and closed: anything else is UNKNOWN."""

    QUOTA_EXHAUSTED = "quota_exhausted"
    TIMEOUT = "timeout"
    SPAWN_FAILED = "spawn_failed"
    BACKEND_ERROR = "backend_error"
    INTERRUPTED = "interrupted"
    BACKGROUND_ABORTED = "background_aborted"
    STORE_UNWRITABLE = "store_unwritable"  # the state dir refused the job's record (full, read-only, removed)
    HOST_LOST = "host_lost"  # the relay host went away (killed, idled out, replaced) before it answered
    HOST_UNRESPONSIVE = "host_unresponsive"  # the relay host is there but did not answer within its bound
    HOST_SUPERSEDED = "host_superseded"  # a newer relay's host serves the state dir: this older server defers
    UNKNOWN = "unknown"


class QuotaLevel(StrEnum):
    """How much of a quota group is left (agy's /usage), from the group's tightest window: most to least headroom."""

    OK = "ok"
    LOW = "low"
    CRITICAL = "critical"
    EXHAUSTED = "exhausted"


BackendName = NewType("BackendName", str)
"""An upstream a run can go to: the name its entry registers (backends/backend_registry.py), e.g. `agy`."""


class Toolset(StrEnum):
    """Opt-in groups of tools, enabled with GEMINI_RELAY_TOOLSETS (comma-separated, or `all`)."""

    JOBS = "jobs"
    REVIEW = "review"
    MEDIA = "media"


class Effect(StrEnum):
    """What a tool does to the world: one closed vocabulary from which its MCP annotations (readOnly, destructive,
    idempotent and openWorld hints) are derived, so no tool states a combination that says nothing true."""

    LOCAL = "local"  # answered in-process from the relay's own state; changes nothing, the same call answers alike
    LOCAL_LIVE = "local_live"  # in-process and changes nothing, but the answer moves between calls (a tally, a wait)
    READS = "reads"  # reads the upstream (the Gemini API) and changes nothing
    ASKS = "asks"  # runs a model turn that answers and changes nothing
    CREATES = "creates"  # makes new things upstream or on disk (images, video, music); replaces nothing
    WRITES = "writes"  # a model turn or API call that may change or delete what exists (project files, uploads)
    WRITES_LOCAL = "writes_local"  # changes the workspace or the relay's jobs in-process (applies, discards)
    STOPS = "stops"  # stops a run in-process; stopping it again changes nothing more

    @property
    def hints(self) -> Hints:
        """The MCP tool annotations this effect stands for."""
        return Hints(
            read_only=self in _READ_ONLY,
            destructive=self in _DESTRUCTIVE,
            idempotent=self in _IDEMPOTENT,
            open_world=self in _OPEN_WORLD,  # it reaches an upstream (a model turn, the Gemini API)
        )


class Hints(NamedTuple):
    read_only: bool
    destructive: bool
    idempotent: bool
    open_world: bool


_READ_ONLY = frozenset({Effect.LOCAL, Effect.LOCAL_LIVE, Effect.READS, Effect.ASKS})
_DESTRUCTIVE = frozenset({Effect.WRITES, Effect.WRITES_LOCAL, Effect.STOPS})
_IDEMPOTENT = frozenset({Effect.LOCAL, Effect.READS, Effect.STOPS})
_OPEN_WORLD = frozenset({Effect.READS, Effect.ASKS, Effect.CREATES, Effect.WRITES})


class Verdict(StrEnum):
    """How a consensus review ends: what the panel's findings ask of the change."""

    SHIP = "ship"  # nothing blocks it
    FIX_FIRST = "fix_first"  # blocking problems, fixable within the present design
    REDESIGN = "redesign"  # the approach itself is wrong

    @property
    def label(self) -> str:
        return self.value.replace("_", " ")


class Severity(StrEnum):
    """How much one review finding matters."""

    HIGH = "high"
    MEDIUM = "medium"
    LOW = "low"


class Agreement(StrEnum):
    """Who of the panel that answered raised a finding: every one of them, or only some (named beside it)."""

    ALL = "all"
    SOME = "some"
