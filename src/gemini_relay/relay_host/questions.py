"""Questions of runs in the relay host, answered by the server attached to the run.

The server says at `create` what its caller can do (`ask_terms`, jobs/protocol.py): answer within a timeout, or
not at all and why. A run that asks (HostAsker) publishes `{"question": ...}` into its LiveJob's stream; the attached
server asks its client and sends the answer back with the `answer` op. A server that never answers (it died, or
lost its client) costs the run at most the timeout plus a margin; then the call's policy decides.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import anyio

from gemini_relay.backends.asking import Answer, Asker, AskOutcome, Question, Unasked
from gemini_relay.config import DEFAULT_ASK_TIMEOUT

ANSWER_MARGIN = 10.0  # past the caller's own timeout: the server's elicitation and the answer's trip back


@dataclass
class _Pending:
    done: anyio.Event = field(default_factory=anyio.Event)
    answer: Answer | None = None


@dataclass
class Questions:
    """A run's open questions and the ids of those already settled (never replayed to a later attacher)."""

    pending: dict[str, _Pending] = field(default_factory=dict[str, _Pending])
    settled: set[str] = field(default_factory=set[str])

    def answer(self, question_id: str, answer: Answer) -> bool:
        """The first answer to a question wins; False for a question not open (settled, or never asked)."""
        pending = self.pending.get(question_id)
        if pending is None or pending.answer is not None:
            return False
        pending.answer = answer
        pending.done.set()
        return True


class HostAsker:
    """The Asker of a run whose caller can answer: questions travel to the attached server."""

    def __init__(self, questions: Questions, publish: Callable[[dict[str, Any]], None], timeout: float) -> None:
        self._questions = questions
        self._publish = publish  # LiveJob.publish_question
        self.timeout = timeout

    async def ask(self, question: Question) -> Answer:
        question_id = uuid.uuid4().hex[:12]
        pending = self._questions.pending[question_id] = _Pending()
        try:
            self._publish({"id": question_id, "timeout": self.timeout, **question.to_json()})
            with anyio.move_on_after(self.timeout + ANSWER_MARGIN):
                await pending.done.wait()
        finally:
            self._questions.pending.pop(question_id, None)
            self._questions.settled.add(question_id)
        return pending.answer or Answer(AskOutcome.TIMED_OUT)


def asker_for(terms: dict[str, Any] | None, questions: Questions, publish: Callable[[dict[str, Any]], None]) -> Asker:
    """The run's Asker from the `create` request's terms (see ask_terms)."""
    if terms is None:
        return Unasked(AskOutcome.NO_CALLER)
    if "outcome" in terms:
        try:
            return Unasked(AskOutcome(str(terms["outcome"])))
        except ValueError:
            return Unasked(AskOutcome.NO_CALLER)
    return HostAsker(questions, publish, float(terms.get("timeout") or DEFAULT_ASK_TIMEOUT))
