"""The ACP vocabulary a connection speaks in: its exceptions, the items it routes to a session's listener, and how
a JSON-RPC error and a child's exit read. Pure."""

from __future__ import annotations

import signal
from dataclasses import dataclass, field
from typing import Any, Literal

from gemini_relay.errors import BackendUnavailable


class AcpHandshakeError(BackendUnavailable):
    """`gemini --acp` could not be started or did not complete `initialize`: fall back to cold `-p`."""


class AcpConnectionLost(Exception):
    """The child exited (or was killed) while a request was outstanding."""

    def __init__(self, description: str) -> None:
        super().__init__(description)
        self.description = description


class AcpRpcError(Exception):
    """The agent answered a request with a JSON-RPC error."""

    def __init__(self, code: int, message: str, data: object = None) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.data = data

    @property
    def details(self) -> str:
        """The agent's own explanation (`data.details`), which an internal error carries instead of `message`."""
        if isinstance(self.data, dict):
            details = self.data.get("details")  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
            if isinstance(details, str):
                return details
        return ""


InboundKind = Literal["update", "permission", "response", "closed"]


@dataclass(frozen=True, slots=True)
class Inbound:
    """One item for a session's listener. `response` carries the prompt's result or `error`; `closed` the cause."""

    kind: InboundKind
    payload: dict[str, Any] = field(default_factory=dict[str, Any])
    request_id: int | str | None = None
    error: AcpRpcError | None = None


def describe_exit(returncode: int | None) -> str:
    if returncode is None:
        return "gemini --acp closed its output"
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = str(-returncode)
        return f"gemini --acp was killed by signal {-returncode} ({name})"
    return f"gemini --acp exited {returncode}"


def rpc_error(error: object) -> AcpRpcError:
    if not isinstance(error, dict):
        return AcpRpcError(-32603, str(error))
    code = error.get("code")  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
    message = error.get("message")  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
    return AcpRpcError(
        code if isinstance(code, int) else -32603,
        message if isinstance(message, str) else "",
        error.get("data"),  # pyright: ignore[reportUnknownMemberType]
    )
