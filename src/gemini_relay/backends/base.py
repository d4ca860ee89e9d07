"""The contract every backend meets, so tools and the engine never know which upstream ran."""

from __future__ import annotations

from typing import Protocol

from gemini_relay.core.vocabulary import BackendName
from gemini_relay.jobs.models import RunRecord


class Backend(Protocol):
    """One upstream. `run` folds the upstream's events into the record and returns on success.

    It raises `RunFailed` (classified, with partial text) when the upstream fails, and `BackendUnavailable` when it
    cannot start at all. Cancelling the caller stops the upstream (a subprocess backend stops its process group).
    A backend may spawn per run, or serve runs from a warm process; the engine cannot tell the difference.
    """

    @property
    def name(self) -> BackendName: ...

    @property
    def command(self) -> str:
        """The word used in messages about this upstream, e.g. `gemini` in `gemini timed out after 30s`."""
        ...

    @property
    def max_concurrent(self) -> int | None:
        """A hard cap for this upstream (agy: 1), or None for the server-wide default."""
        ...

    async def run(self, record: RunRecord) -> None: ...
