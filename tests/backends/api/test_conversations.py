"""Conversations kept by the relay for the stateless API: saved on success, continued by id, listed, ids checked."""

from __future__ import annotations

import json
import stat
import uuid

import pytest

from gemini_relay.backends.api import ConversationStore, validate_conversation_id
from gemini_relay.core.events import SessionStarted
from gemini_relay.errors import InputError, RunFailed

from .conftest import MODEL, ApiWorld, collect, finished

pytestmark = pytest.mark.anyio


async def test_a_continued_conversation_sends_the_earlier_turns(world: ApiWorld) -> None:
    backend = world.backend()
    first = finished(await collect(backend, world.spec("[[fake:history]] first question")))
    assert first.text == "turns=1" and first.session_id is not None
    second = finished(await collect(backend, world.spec("[[fake:history]] again", conversation_id=first.session_id)))
    assert second.text == "turns=2" and second.session_id == first.session_id and second.num_turns == 2
    contents = world.api.requests[-1].body["contents"]
    assert [c["role"] for c in contents] == ["user", "model", "user"]
    assert contents[0]["parts"][0]["text"] == "[[fake:history]] first question"
    assert contents[1]["parts"][0]["text"] == "turns=1"


async def test_a_fresh_run_mints_a_uuid_and_stores_its_turn_privately(world: ApiWorld) -> None:
    done = finished(await collect(world.backend(), world.spec("hello")))
    assert done.session_id is not None and str(uuid.UUID(done.session_id)) == done.session_id
    root = world.state / "api-conversations"
    assert stat.S_IMODE(root.stat().st_mode) == 0o700
    path = root / f"{done.session_id}.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["id"] == done.session_id and data["cwd"] == str(world.project)
    assert [(t["prompt"], t["model"]) for t in data["turns"]] == [("hello", MODEL)]
    assert not [p for p in root.iterdir() if p.suffix == ".tmp"]


async def test_a_session_id_chosen_up_front_names_the_fresh_conversation(world: ApiWorld) -> None:
    chosen = str(uuid.uuid4())
    events = await collect(world.backend(), world.spec("hi", session_id=chosen))
    assert isinstance(events[0], SessionStarted) and events[0].session_id == chosen
    assert finished(events).session_id == chosen


async def test_a_failed_run_saves_no_turn(world: ApiWorld) -> None:
    backend = world.backend()
    first = finished(await collect(backend, world.spec("one")))
    assert first.session_id is not None
    with pytest.raises(RunFailed):
        await collect(backend, world.spec("[[fake:error:500]]", conversation_id=first.session_id))
    assert len(backend.conversations.turns(first.session_id)) == 1


async def test_an_unknown_conversation_id_is_an_input_error_naming_it(world: ApiWorld) -> None:
    unknown = str(uuid.uuid4())
    with pytest.raises(InputError, match=f"Unknown conversationId {unknown}"):
        await collect(world.backend(), world.spec("hi", conversation_id=unknown))
    assert world.api.requests == []


@pytest.mark.parametrize(
    "bad",
    [
        "",
        "not-a-uuid",
        "0F8FAD5B-D9CB-469F-A165-70867728950E",
        "0f8fad5b-d9cb-469f-a165-70867728950e (continue with this)",
        "../0f8fad5b-d9cb-469f-a165-70867728950e",
        "0f8fad5b-d9cb-469f-a165-70867728950e\n",
        "x" * 5000,
    ],
)
async def test_a_malformed_conversation_id_is_refused_before_any_request(world: ApiWorld, bad: str) -> None:
    with pytest.raises(InputError, match="conversationId"):
        validate_conversation_id(bad)
    with pytest.raises(InputError, match="conversationId"):
        await collect(world.backend(), world.spec("hi", conversation_id=bad))
    assert world.api.requests == []


async def test_conversations_are_listed_newest_first_with_their_first_prompt(world: ApiWorld) -> None:
    backend = world.backend()
    older = finished(await collect(backend, world.spec("the older one")))
    newer = finished(await collect(backend, world.spec("the newer   one\nspans lines")))
    assert older.session_id and newer.session_id
    await collect(backend, world.spec("a follow-up", conversation_id=newer.session_id))
    listed = backend.list_conversations(10)
    assert [c.id for c in listed] == [newer.session_id, older.session_id]
    assert listed[0].first_prompt == "the newer one spans lines"
    assert listed[0].cwd == str(world.project) and listed[0].last_active.endswith("Z")
    assert [c.id for c in backend.list_conversations(1)] == [newer.session_id]


def test_an_empty_or_corrupt_store_lists_nothing_and_never_fails(world: ApiWorld) -> None:
    store = ConversationStore(world.state)
    assert store.recent(5) == []
    store.root.mkdir(parents=True)
    (store.root / f"{uuid.uuid4()}.json").write_text("{half a file", encoding="utf-8")
    (store.root / "notes.json").write_text("{}", encoding="utf-8")
    assert store.recent(5) == []


def test_a_corrupt_conversation_file_is_reported_as_unknown(world: ApiWorld) -> None:
    store = ConversationStore(world.state)
    store.root.mkdir(parents=True)
    broken = str(uuid.uuid4())
    (store.root / f"{broken}.json").write_text("[]", encoding="utf-8")
    with pytest.raises(InputError, match=f"Unknown conversationId {broken}"):
        store.turns(broken)
