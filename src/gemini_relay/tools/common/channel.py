"""What a tool may ask of the MCP client while its call runs: a form for the user (elicitation), a model turn
(sampling), the client's roots, and log and progress notifications on the call's stream.

The server gives each call its own Channel (server/sdk_channel.py), speaking whichever way the session does: in a
2025-11-25 session a question is a request on the stream, answered before the call goes on; in 2026-07-28 the call
ends with an `input_required` result and the client retries it with the answers (`inputResponses`, keyed as asked),
so a tool asks by raising InputRequired and reads the answers on the retry (`response`). `ask` hides the difference
for the common case: one form, one answer.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NoReturn, Protocol

ELICIT = "elicitation/create"
SAMPLE = "sampling/createMessage"
ROOTS = "roots/list"


class InputRequired(Exception):
    """The call needs answers from the client first (2026-07-28): the server answers `input_required` with these
    requests (key → `{"method", "params"}`) and `state`, which it seals and the client echoes on its retry."""

    def __init__(self, requests: Mapping[str, Mapping[str, Any]], state: str | None = None) -> None:
        super().__init__(f"input required: {', '.join(requests) or 'state only'}")
        self.requests = {key: dict(value) for key, value in requests.items()}
        self.state = state


class MissingCapability(Exception):
    """The call needs a client capability the client did not declare (-32021 on the wire)."""

    def __init__(self, capability: str) -> None:
        super().__init__(f"the client did not declare the {capability} capability")
        self.capability = capability


@dataclass(frozen=True)
class Answer:
    """The user's answer to a form: `accept` (with the form's content), `decline` or `cancel`."""

    action: str
    content: dict[str, Any] = field(default_factory=dict[str, Any])

    @property
    def accepted(self) -> bool:
        return self.action == "accept"


def elicit_request(message: str, schema: Mapping[str, Any]) -> dict[str, Any]:
    return {"method": ELICIT, "params": {"mode": "form", "message": message, "requestedSchema": dict(schema)}}


def sample_request(prompt: str, max_tokens: int) -> dict[str, Any]:
    message = {"role": "user", "content": {"type": "text", "text": prompt}}
    return {"method": SAMPLE, "params": {"messages": [message], "maxTokens": max_tokens}}


def roots_request() -> dict[str, Any]:
    return {"method": ROOTS, "params": {}}


def answer_of(response: Mapping[str, Any] | None) -> Answer | None:
    """An elicitation response as an Answer; None when there is none (or it is not one)."""
    if response is None or not isinstance(response.get("action"), str):
        return None
    content = response.get("content")
    return Answer(str(response["action"]), dict(content) if isinstance(content, Mapping) else {})


def sampled_text(response: Mapping[str, Any] | None) -> str:
    content = (response or {}).get("content")
    if isinstance(content, list):
        content = content[0] if content else {}
    return str(content.get("text", "")) if isinstance(content, Mapping) else ""


class Channel(Protocol):
    """One call's way back to the client."""

    @property
    def modern(self) -> bool:
        """2026-07-28 (questions are `input_required` results), not a 2025-11-25 session."""
        ...

    @property
    def state(self) -> str | None:
        """The state this server minted in the previous round, verified (None on a first round)."""
        ...

    def supports(self, capability: str) -> bool:
        """The client declared this capability (`elicitation`, `sampling`, `roots`)."""
        ...

    def response(self, key: str) -> dict[str, Any] | None:
        """The client's answer to the input request `key` of the previous round (2026-07-28)."""
        ...

    def need(self, requests: Mapping[str, Mapping[str, Any]], state: str | None = None) -> NoReturn:
        """End this round asking for `requests` (2026-07-28); raises InputRequired."""
        ...

    async def ask(self, schema: Mapping[str, Any], message: str, *, key: str = "ask") -> Answer:
        """Ask the user to fill in a form; MissingCapability if the client cannot show one."""
        ...

    async def sample(self, prompt: str, *, max_tokens: int = 100, key: str = "sample") -> str:
        """One model turn of the client's; the text it answered."""
        ...

    async def roots(self, *, key: str = "roots") -> list[str]:
        """The client's root URIs."""
        ...

    async def log(self, level: str, message: str) -> None:
        """A `notifications/message` on the call's stream (sent only where the protocol allows it)."""
        ...

    async def progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        """A progress notification, if the call asked for progress."""
        ...
