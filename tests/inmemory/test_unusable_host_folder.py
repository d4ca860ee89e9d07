"""A server whose state dir cannot take its own host's socket (read-only, full, or its host folder not a folder)
still starts and answers: its private host listens in a temporary folder of its own instead of crashing at start."""

from __future__ import annotations

import pytest

from tests.inmemory.conftest import InMemory, text_of

pytestmark = pytest.mark.anyio


async def test_a_state_dir_whose_host_folder_cannot_take_a_socket_still_serves(relay: InMemory) -> None:
    state = relay.base / "state"
    state.mkdir(parents=True, exist_ok=True)
    (state / "host").write_text("not a folder", encoding="utf-8")  # as a read-only mount refuses: bind fails
    async with relay.client() as client:
        answered = await client.call_tool("gemini-ping", {"prompt": "still here"})
    assert not answered.is_error and "still here" in text_of(answered)
    assert (state / "host").read_text(encoding="utf-8") == "not a folder"
