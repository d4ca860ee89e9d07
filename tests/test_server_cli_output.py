"""The real Gemini CLI 0.61.0 may cut its piped stdout at 64 KiB when it exits: a run whose one answer event is far
larger fails, the failure says what happened and what to do, and one just past the cut is either whole or said cut."""

from __future__ import annotations

import pytest
from mcp import Client

from gemini_relay.format import RESPONSE_PREFIX, THREAD_MARKER
from tests.fakes.fake_gemini_api import big_text
from tests.harness import Relay, chunk_bodies, fresh_case, module_event_loop, shared_server
from tests.test_server_surface import text_of

pytestmark = pytest.mark.anyio
anyio_backend = module_event_loop()
cold_world, cold_client = shared_server("cold")  # one server on the cold CLI for both cases
JUST_PAST_KB = 70  # one answer event a little past the 64 KiB pipe cut


def assert_said_cut(text: str, kb: int, said: tuple[str, ...]) -> None:
    """The run failed saying where the CLI's output stopped and what to do, and kept what arrived."""
    assert "gemini exited without a final result" in text
    assert "the Gemini CLI's output stopped at " in text and any(s in text for s in said)
    assert "Ask for a shorter answer (maxResponseLength) or split the task" in text
    partial = text.split("[Partial response — the run did not finish]\n", 1)[1]
    assert len(partial) > 30_000 and big_text(kb).startswith(partial.rstrip())  # what arrived is kept


async def test_an_answer_event_far_past_the_pipe_cut_fails_saying_the_output_was_cut(
    cold_world: Relay, cold_client: Client
) -> None:
    fresh_case(cold_world)
    cold_world.api.set_scenario("echo", big_text(200))  # one stream chunk: one answer event, always cut mid-event
    result = await cold_client.call_tool("gemini-ask", {"prompt": "write a lot"})
    assert result.is_error
    assert_said_cut(text_of(result), 200, ("its last event was cut off after ",))


async def test_an_answer_event_just_past_the_pipe_cut_arrives_whole_or_fails_saying_where_it_stopped(
    cold_world: Relay, cold_client: Client
) -> None:
    fresh_case(cold_world)
    # 70 KB is cut or not as the pipe drains before the CLI exits: on a loaded machine it arrived whole (seen in a
    # loaded run), elsewhere it is cut. Either way the caller is told exactly what happened.
    cold_world.api.set_scenario("echo", big_text(JUST_PAST_KB))
    result = await cold_client.call_tool("gemini-ask", {"prompt": "write a lot"})
    text = text_of(result)
    if not result.is_error:  # drained in time: the whole answer, in 1.2.0's chunks
        bodies = await chunk_bodies(cold_client, text)
        whole = "".join(bodies).removeprefix(f"{RESPONSE_PREFIX}\n").rsplit(f"\n\n{THREAD_MARKER}", 1)[0]
        assert len(bodies) > 1 and whole == big_text(JUST_PAST_KB)
        return
    assert_said_cut(text, JUST_PAST_KB, ("its last event was cut off after ", "the events after it"))
