"""An MCP client's elicitation callback for tests: it records each question and answers as told."""

from __future__ import annotations

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
