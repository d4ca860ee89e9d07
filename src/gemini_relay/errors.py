"""The gemini-relay exception tree; every layer raises these and the tool boundary turns them into results.

RelayError
├── ConfigError            bad environment or settings (fails fast at startup)
├── InputError             a caller's request cannot be served as asked (bad path, bad key, conflict)
│   ├── PathEscapeError    an `@` reference or output path leaves the project root
│   └── ChunkError         an unknown or expired chunk cache key / index
├── BackendUnavailable     the upstream binary or API is missing, too old or unusable
└── RunFailed              a run started and did not succeed; carries the failure reason and partial text
    ├── RunTimedOut
    └── RunCancelled
"""

from __future__ import annotations

from gemini_relay.core.vocabulary import FailureReason


class RelayError(Exception):
    """Base of every error the relay raises on purpose; its message is safe to show the caller."""


class ConfigError(RelayError):
    """The environment or settings are invalid."""


class InputError(RelayError):
    """The request cannot be served as asked. With `field`, it is about one argument: the tool boundary answers
    `Invalid arguments for <tool>: <field>: <message>`, the same shape as a schema violation."""

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


class PathEscapeError(InputError):
    """A path reference resolves outside the project root; the whole call is refused."""

    def __init__(self, token: str, reason: str) -> None:
        self.token = token
        self.reason = reason
        super().__init__(f"Refusing @{token}: {reason}")


class ChunkError(InputError):
    """A chunk cache key or index does not exist (or has expired)."""


class BackendUnavailable(RelayError):
    """The backend cannot be used at all (binary missing, too old, no credentials)."""


class RunFailed(RelayError):
    """A run reached the upstream and failed.

    `partial_text` is whatever answer text arrived before the failure; `retryable` and `error_id` come from the
    upstream when it names them. `reason` is None only for a cancelled run (cancelled is a state, not a failure).
    """

    def __init__(
        self,
        message: str,
        *,
        reason: FailureReason | None = FailureReason.BACKEND_ERROR,
        partial_text: str = "",
        retryable: bool | None = None,
        error_id: str | None = None,
        recovery: str | None = None,
        http_status: int | None = None,
    ) -> None:
        super().__init__(message)
        self.http_status = http_status  # the upstream's HTTP status when it answered with one (API backend)
        self.reason = reason
        self.partial_text = partial_text
        self.retryable = retryable
        self.error_id = error_id
        self.recovery = recovery

    @property
    def message(self) -> str:
        return str(self.args[0]) if self.args else ""


class RunTimedOut(RunFailed):
    """The run exceeded its deadline and its process group was stopped."""

    def __init__(self, command: str, seconds: float, *, partial_text: str = "", message: str | None = None) -> None:
        super().__init__(
            message or f"{command} timed out after {_format_seconds(seconds)}s",
            reason=FailureReason.TIMEOUT,
            partial_text=partial_text,
        )
        self.seconds = seconds


class RunCancelled(RunFailed):
    """The run was stopped on request (gemini-cancel or an MCP cancel)."""

    def __init__(self, message: str, *, partial_text: str = "") -> None:
        super().__init__(message, reason=None, partial_text=partial_text)


def _format_seconds(seconds: float) -> str:
    return str(int(seconds)) if float(seconds).is_integer() else f"{seconds:.1f}"
