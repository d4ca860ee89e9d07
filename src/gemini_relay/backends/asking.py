"""Questions an upstream agent asks mid-run (may I run this command?), and who answers them.

A run's Asker is the person behind the MCP call, reached through the client (server/elicit.py turns a Question into
`elicitation/create`); the relay host forwards questions of the runs it holds to the server attached to them. The
Asker of the current run is the ASKER context variable: unset for durable jobs and MCP tasks, whose caller is gone,
so their questions are answered by the call's policy. No `mcp` import here (layers: nothing below tools/ knows MCP).
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol

from gemini_relay.config import DEFAULT_ASK_TIMEOUT


class AskOutcome(StrEnum):
    """How a question ended. Every outcome but ANSWERED leaves the decision to the call's policy."""

    ANSWERED = "answered"
    DECLINED = "declined"  # the user dismissed the question (elicitation decline or cancel)
    INVALID_ANSWER = "invalid_answer"  # the client answered off the question's form: an unknown action or choice
    TIMED_OUT = "timed_out"
    NO_ELICITATION = "no_elicitation"  # the MCP client did not declare elicitation
    NO_CALLER = "no_caller"  # a durable job or an MCP task: nobody waits on the call to answer

    def describe(self, timeout: float | None = None) -> str:
        """Why the policy decided, for the caller's notice."""
        return {
            AskOutcome.ANSWERED: "the user answered",
            AskOutcome.DECLINED: "the user declined to answer",
            AskOutcome.INVALID_ANSWER: "the client's answer was not one the question offered (taken as no answer)",
            AskOutcome.TIMED_OUT: f"the user did not answer within {timeout or DEFAULT_ASK_TIMEOUT:g}s",
            AskOutcome.NO_ELICITATION: "the MCP client cannot be asked (it did not declare elicitation)",
            AskOutcome.NO_CALLER: "a background job or MCP task has no caller to ask",
        }[self]


@dataclass(frozen=True)
class Option:
    """One answer the upstream offers, as it names it (`proceed_once` / "Allow" / allow_once)."""

    option_id: str
    name: str
    kind: str  # ACP's: allow_once, allow_always, reject_once, reject_always

    @property
    def allows(self) -> bool:
        return self.kind.startswith("allow")


@dataclass(frozen=True)
class Question:
    """What the agent wants to do, exactly (`action`: the command line, the file, a diff summary), and the answers
    the upstream accepts."""

    title: str
    action: str
    options: tuple[Option, ...]

    def option(self, option_id: str) -> Option | None:
        return next((o for o in self.options if o.option_id == option_id), None)

    def to_json(self) -> dict[str, Any]:
        return {
            "title": self.title,
            "action": self.action,
            "options": [{"id": o.option_id, "name": o.name, "kind": o.kind} for o in self.options],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Question:
        options = tuple(Option(str(o["id"]), str(o["name"]), str(o["kind"])) for o in data.get("options") or ())
        return cls(str(data.get("title") or ""), str(data.get("action") or ""), options)


@dataclass(frozen=True)
class Answer:
    outcome: AskOutcome
    option_id: str | None = None  # set when ANSWERED: one of the question's options

    def to_json(self) -> dict[str, Any]:
        return {"outcome": self.outcome.value, "option_id": self.option_id}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Answer:
        option = data.get("option_id")
        return cls(AskOutcome(str(data.get("outcome"))), option if isinstance(option, str) else None)


class Asker(Protocol):
    @property
    def timeout(self) -> float:
        """The seconds a person has to answer (named in the notice when they did not)."""
        ...

    async def ask(self, question: Question) -> Answer:
        """The user's answer, or why there is none (never raises for a user who does not answer)."""
        ...


@dataclass(frozen=True)
class Unasked:
    """An Asker that never asks, saying why."""

    outcome: AskOutcome
    timeout: float = DEFAULT_ASK_TIMEOUT

    async def ask(self, question: Question) -> Answer:
        return Answer(self.outcome)


ASKER: contextvars.ContextVar[Asker | None] = contextvars.ContextVar("asker", default=None)


def current_asker() -> Asker:
    """The current run's Asker: the caller's, or one that says there is no caller."""
    return ASKER.get() or Unasked(AskOutcome.NO_CALLER)


@contextmanager
def without_caller() -> Iterator[None]:
    """Within this block nobody waits on the runs started (a durable job outlives its call): no Asker."""
    token = ASKER.set(None)
    try:
        yield
    finally:
        ASKER.reset(token)
