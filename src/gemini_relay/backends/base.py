"""The contract every backend meets, so tools and the engine never know which upstream ran."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Protocol

from gemini_relay.core.events import AgentEvent
from gemini_relay.core.spec import RunSpec
from gemini_relay.core.vocabulary import BackendName


class Backend(Protocol):
    """One upstream. `run` turns it into a stream of typed events that ends in exactly one terminal `Finished`.

    Instead of finishing it raises `RunFailed` (classified: reason, HTTP status, retryable, error id, partial text)
    when the upstream fails, and `BackendUnavailable` when it cannot start at all. It never sees a job record: the
    run's state is folded from these events by the engine alone. Closing the stream or cancelling the caller stops
    the upstream (a subprocess backend stops its process group).
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

    def check(self, spec: RunSpec) -> None:
        """Raise InputError (with `field`) for a request this backend would refuse; called before a job exists."""
        ...

    def run(self, spec: RunSpec) -> AsyncGenerator[AgentEvent, None]: ...
