"""The caller of a tools/call, as the Asker of its runs: a Question becomes MCP `elicitation/create` (form mode)
sent on the call's own request stream, and the user's choice comes back as an Answer.

A client that did not declare form elicitation (or whose transport cannot carry a server request now) is never
asked: its runs' questions are decided by the call's policy, and the answer says so. A decline or cancel, a timeout
(GEMINI_RELAY_ASK_TIMEOUT) or a reply off the form (an unknown action, a choice not offered or not a string: an
invalid answer, at once, never asked again) falls back to the policy too.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

from gemini_relay.backends.asking import ASKER, Answer, Asker, AskOutcome, Question, Unasked
from gemini_relay.log import logger

CHOICE = "choice"  # the one field of the form


class ClientAsker:
    def __init__(self, ctx: ServerRequestContext[Any], timeout: float) -> None:
        self._ctx = ctx
        self.timeout = timeout

    async def ask(self, question: Question) -> Answer:
        schema = {
            "type": "object",
            "properties": {
                CHOICE: {
                    "type": "string",
                    "title": "Your answer",
                    "oneOf": [{"const": o.option_id, "title": o.name} for o in question.options],
                }
            },
            "required": [CHOICE],
        }
        message = f"Permission requested: {question.title}\n\n{question.action}"
        result: types.ElicitResult | None = None
        try:
            with anyio.move_on_after(self.timeout):
                result = await self._ctx.session.elicit_form(message, schema, related_request_id=self._ctx.request_id)
        except ValidationError:
            # The SDK parses the client's reply as an ElicitResult: an action other than accept/decline/cancel, or
            # content that is no form's, is the client's error, not ours.
            logger.info("The permission question got an answer off its form; taken as no answer")
            return Answer(AskOutcome.INVALID_ANSWER)
        except (MCPError, anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as exc:
            logger.info("The permission question could not be asked: %s", type(exc).__name__)
            return Answer(AskOutcome.DECLINED)
        if result is None:
            return Answer(AskOutcome.TIMED_OUT)
        if result.action != "accept":
            return Answer(AskOutcome.DECLINED)
        choice = (result.content or {}).get(CHOICE)
        if not isinstance(choice, str) or question.option(choice) is None:
            return Answer(AskOutcome.INVALID_ANSWER)
        return Answer(AskOutcome.ANSWERED, choice)


def caller_asker(ctx: ServerRequestContext[Any], timeout: float) -> Asker:
    """The call's Asker: its client, when it declared form elicitation and can be sent a request now."""
    capabilities = ctx.session.client_capabilities
    elicitation = capabilities.elicitation if capabilities is not None else None
    # `elicitation: {}` (2025-06-18) means form mode; a client declaring only `url` cannot fill a form.
    form = elicitation is not None and (elicitation.form is not None or elicitation.url is None)
    if not form or not ctx.session.can_send_request:
        return Unasked(AskOutcome.NO_ELICITATION, timeout)
    return ClientAsker(ctx, timeout)


@contextmanager
def asking_caller(ctx: ServerRequestContext[Any], timeout: float) -> Iterator[Asker]:
    """Within this block, runs started by the call ask its caller (backends/asking.ASKER)."""
    asker = caller_asker(ctx, timeout)
    token = ASKER.set(asker)
    try:
        yield asker
    finally:
        ASKER.reset(token)
