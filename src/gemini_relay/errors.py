"""The gemini-relay exception tree: every class an error the relay raises on purpose can have, with the module (and so
the layer) that raises it. The tool boundary (server/relay.py) turns each into a result: `InputError` with a field as
"Invalid arguments for <tool>: <field>: …", `RunFailed` with its reason, recovery and partial text, the rest as
their message. Exceptions that never leave their module (a lost ACP connection, a torn envelope) are not RelayErrors:
each is caught where it is raised and translated into one of these. tests/test_errors.py keeps this drawing true.

RelayError                       errors.py
├── ConfigError                  errors.py         bad environment or settings
├── InputError                   errors.py         the caller's request cannot be served as asked
│   ├── PathEscapeError          errors.py         an `@` reference or output path leaves the project root
│   ├── ChunkError               errors.py         an unknown or expired chunk cache key / index
│   │   ├── ChunkNotFoundError   content/_errors   the key is malformed, unknown or expired
│   │   └── ChunkIndexError      content/_errors   the key has no chunk with that index
│   ├── JobNotFound              jobs/store/job_store   no such job (or swept after its TTL)
│   ├── JobConflict              jobs/store/job_store   same idempotency key for another request, or a busy conversation
│   ├── ImageFetchError          content/fetch_image  an image URL refused (SSRF rules) or not fetched
│   ├── WorktreeRefused          content/worktree  isolation 'worktree' cannot be used here (no repository, changes)
│   └── GitRequestError          content/git_diff  git cannot answer the request: unknown base, diff too large
│       └── NotARepository       content/git_diff  (also a GitError)
├── GitError                     content/git_diff  git could not answer (what the review tools catch)
│   ├── GitRequestError          (above)
│   └── GitUnavailable           content/git_diff  git cannot be run: the machine's setup, not the caller's
├── StoreUnwritable              jobs/store/job_store   the state dir refused a write while a job was created
├── StructuredOutputError        content/json_schema  the answer fails its schema even after the repair turn
├── BackendUnavailable           errors.py         an upstream (CLI binary, API key, ACP) cannot be used at all
│   ├── AcpHandshakeError        backends/gemini_cli/acp/wire  `gemini --acp` did not start or initialize
│   └── HostUntrusted            jobs/protocol     the host socket or its directory is not this user's
└── RunFailed                    errors.py         a run started and did not succeed: reason, recovery, partial text
    ├── RunTimedOut              errors.py         past its deadline; its process group was stopped
    ├── RunCancelled             errors.py         stopped on request (gemini-cancel, an MCP cancel)
    ├── HostLost                 jobs/protocol     the relay host went away before answering (retryable)
    ├── HostUnresponsive         jobs/protocol     the relay host did not answer within its bound (retryable)
    ├── HostSuperseded           jobs/protocol     a newer relay's host serves the state dir: an older server defers
    ├── TurnsStopped             backends/gemini_cli/acp/backend  the CLI stopped the turn (loop, turn limit)
    └── QueueWaitExceeded        jobs/engine/pacer  could not start within the queue wait limit (safe to retry)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gemini_relay.core.vocabulary import FailureReason

if TYPE_CHECKING:
    from gemini_relay.core.receipt import Receipt


class RelayError(Exception):
    """Base of every error the relay raises on purpose; its message is safe to show the caller."""


class ConfigError(RelayError):
    """The environment or settings are invalid. `variable`: the environment variable at fault, when one is (a server
    that starts anyway drops it and says why: app.explained_deps)."""

    def __init__(self, message: str, *, variable: str | None = None) -> None:
        super().__init__(message)
        self.variable = variable


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
        # What the run was, when it answered before it failed (jobs/engine/active.py): a partial answer a tool still
        # returns (a timed-out review's findings) shows the run it came from, like any answer.
        self.receipt: Receipt | None = None

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
