"""The real Gemini CLI 0.61.0 cuts its piped stdout at 64 KiB when it exits: a run whose one answer event is that
large fails, and the failure says what happened and what to do."""

from __future__ import annotations

import pytest

from tests.fakes.fake_gemini_api import big_text
from tests.harness import Relay
from tests.test_server_surface import text_of

pytestmark = pytest.mark.anyio


# 200 KB is always cut mid-event; 70 KB arrives whole or is cut, as the pipe drains (either is said as it was).
@pytest.mark.parametrize(
    ("kb", "said"),
    [(200, ("its last event was cut off after ",)), (70, ("its last event was cut off after ", "the events after it"))],
)
async def test_an_answer_event_past_the_pipe_cut_fails_saying_the_output_was_cut(
    relay: Relay, kb: int, said: tuple[str, ...]
) -> None:
    relay.api.set_scenario("echo", big_text(kb))  # one stream chunk: one answer event
    async with relay.client() as client:
        result = await client.call_tool("gemini-ask", {"prompt": "write a lot"})
    text = text_of(result)
    assert result.is_error
    assert "gemini exited without a final result" in text
    assert "the Gemini CLI's output stopped at " in text and any(s in text for s in said)
    assert "Ask for a shorter answer (maxResponseLength) or split the task" in text
    partial = text.split("[Partial response — the run did not finish]\n", 1)[1]
    assert len(partial) > 30_000 and big_text(kb).startswith(partial.rstrip())  # what arrived is kept
