"""The api backend in a server's life: cheap to import, checkable before a job, cancellable, safe to run in parallel."""

from __future__ import annotations

import subprocess
import sys
import uuid
from contextlib import aclosing

import anyio
import pytest

from gemini_relay.backends.api import build_api_backend
from gemini_relay.core.events import TextDelta
from gemini_relay.core.vocabulary import BackendName
from gemini_relay.errors import InputError
from tests.fakes.fake_gemini_api import SLOW_CHUNKS

from .conftest import ApiWorld, collect, finished

pytestmark = pytest.mark.anyio
CANCEL_BOUND = 5.0


def test_importing_the_package_does_not_load_the_sdk() -> None:
    code = "import sys, gemini_relay.backends.api; print('google.genai' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "False"


def test_the_constructor_is_all_the_wiring_needs(world: ApiWorld) -> None:
    backend = build_api_backend(world.settings())
    assert (backend.name, backend.command, backend.max_concurrent) == (BackendName("api"), "gemini-api", None)


def test_check_spec_refuses_what_a_run_would_before_any_request(world: ApiWorld) -> None:
    backend = world.backend()
    with pytest.raises(InputError, match="not a model id"):
        backend.check_spec(world.spec("hi", model="a/b"))
    with pytest.raises(InputError, match="conversationId"):
        backend.check_spec(world.spec("hi", conversation_id="nope"))
    with pytest.raises(InputError, match="Unknown conversationId"):
        backend.check_spec(world.spec("hi", conversation_id=str(uuid.uuid4())))
    backend.check_spec(world.spec("hi"))
    assert world.api.requests == []


async def test_cancelling_a_run_mid_stream_closes_it_promptly_and_saves_nothing(world: ApiWorld) -> None:
    backend = world.backend()
    seen: list[str] = []
    with anyio.fail_after(CANCEL_BOUND):
        async with aclosing(backend.run(world.spec("[[fake:slow:30]]"))) as events:
            async for event in events:
                if isinstance(event, TextDelta):
                    seen.append(event.text)
                    break
    assert seen == [SLOW_CHUNKS[0]]
    assert backend.list_conversations(5) == []


async def test_two_runs_continuing_one_conversation_both_keep_their_turn(world: ApiWorld) -> None:
    backend = world.backend()
    first = finished(await collect(backend, world.spec("start")))
    assert first.session_id is not None
    conversation = first.session_id

    async def follow_up(text: str) -> None:
        await collect(backend, world.spec(text, conversation_id=conversation))

    async with anyio.create_task_group() as group:
        group.start_soon(follow_up, "left")
        group.start_soon(follow_up, "right")
    prompts = [t.prompt for t in backend.conversations.turns(conversation)]
    assert prompts[0] == "start" and sorted(prompts[1:]) == ["left", "right"]
