"""An MCP client's elicitation callback for tests: it records each question and answers as told."""

from __future__ import annotations

import warnings
from typing import Any

import anyio
import mcp_types as types

BOUND = 30.0


class Recorder:
    """An elicitation callback answering `reply` (None: it never answers until released)."""

    def __init__(self, reply: types.ElicitResult | None) -> None:
        self.reply = reply
        self.asked: list[types.ElicitRequestFormParams] = []
        self.release = anyio.Event()

    async def __call__(self, context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        assert isinstance(params, types.ElicitRequestFormParams)
        self.asked.append(params)
        if self.reply is None:
            with anyio.fail_after(10):
                await self.release.wait()
            return types.ElicitResult(action="cancel")
        return self.reply


def accept(choice: str) -> types.ElicitResult:
    return types.ElicitResult(action="accept", content={"choice": choice})


# Replies off the question's form, as a client that is not the SDK can send them (the SDK client refuses to).
OFF_SCHEMA: list[dict[str, Any]] = [
    {"action": "yes"},
    {"action": 1},
    {"action": "accept", "content": {"choice": {"an": "object"}}},
]


def off_schema(raw: dict[str, Any]) -> types.ElicitResult:
    """`raw` sent as it is: model_construct skips the checks the reply would fail."""
    return types.ElicitResult.model_construct(**raw)


def let_the_client_send_anything(monkeypatch: Any) -> None:
    """Lift the SDK client's own check of what its callback returns, so `off_schema` replies reach the server."""
    from mcp_types import methods  # the module the SDK client checks its callbacks' results with

    monkeypatch.setattr(methods, "validate_client_result", lambda *_: None)
    # Dumping such a reply makes pydantic warn, and the suite turns warnings into errors: the client would then answer
    # with an error of its own instead of the off-form reply. pytest scopes this filter to the test.
    warnings.filterwarnings("ignore", message="Pydantic serializer warnings")
