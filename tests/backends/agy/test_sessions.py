"""agy's conversation store for gemini-conversations: the index, transcripts, shim filtering, torn reads (agy.md §6)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import anyio
import pytest

from gemini_relay.backends.agy.sessions import (
    StoreUnreadable,
    agy_state_dir,
    is_shim_workspace,
    latest_for_cwd,
    list_conversations,
    read_last_conversations,
    transcript_path,
)
from gemini_relay.core.spec import RunSpec
from gemini_relay.core.vocabulary import BackendName
from gemini_relay.jobs.engine.engine import RunEngine
from tests.backends.agy.conftest import AgyWorld


@pytest.fixture
def state(tmp_path: Path) -> Path:
    return agy_state_dir({"HOME": str(tmp_path)})


def write_store(state: Path, store: dict[str, str] | str) -> Path:
    path = state / "cache" / "last_conversations.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(store if isinstance(store, str) else json.dumps(store), encoding="utf-8")
    return path


def write_transcript(state: Path, cid: str, prompt: object, mtime: float) -> None:
    path = transcript_path(state, cid)
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [{"type": "USER_INPUT", "content": prompt}, {"source": "MODEL", "type": "PLANNER_RESPONSE", "content": "a"}]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    os.utime(path, (mtime, mtime))


def test_the_state_dir_is_under_home() -> None:
    assert agy_state_dir({"HOME": "/home/u"}) == Path("/home/u/.gemini/antigravity-cli")


def test_a_missing_store_is_empty(state: Path) -> None:
    assert read_last_conversations(state) == {}
    assert list_conversations(state, 20).conversations == []


def test_conversations_are_listed_newest_first_with_cwd_and_first_prompt(state: Path) -> None:
    write_store(state, {"/home/u/old": "c-old", "/home/u/new": "c-new"})
    write_transcript(state, "c-old", "the old question", 1_700_000_000)
    write_transcript(state, "c-new", [{"text": "the new"}, {"text": "question"}], 1_800_000_000)
    listing = list_conversations(state, 20)
    assert [(c.id, c.cwd, c.first_prompt) for c in listing.conversations] == [
        ("c-new", "/home/u/new", "the new question"),
        ("c-old", "/home/u/old", "the old question"),
    ]
    assert listing.conversations[0].last_active == "2027-01-15T08:00:00Z"
    assert len(list_conversations(state, 1).conversations) == 1


def test_conversations_known_only_from_transcripts_are_listed_without_a_cwd(state: Path) -> None:
    write_transcript(state, "c-orphan", "older run", 1_700_000_000)
    (conversation,) = list_conversations(state, 5).conversations
    assert (conversation.id, conversation.cwd) == ("c-orphan", "")


def test_a_long_first_prompt_is_shortened_to_one_line(state: Path) -> None:
    write_transcript(state, "c", "word\n" * 40, 1_700_000_000)
    prompt = list_conversations(state, 5).conversations[0].first_prompt
    assert len(prompt) == 80 and prompt.endswith("…") and "\n" not in prompt


@pytest.mark.parametrize(
    ("path", "shim"),
    [
        ("/tmp/agy-openai-shim/agy-call-17", True),
        ("/var/x/agy-openai-shim/sub/agy-call-3", True),
        ("/tmp/agy-openai-shim/other", False),
        ("/tmp/x/agy-call-3", False),
        ("/tmp/agy-openai-shim", False),
    ],
)
def test_a_shim_workspace_needs_both_the_shim_parent_and_the_call_leaf(path: str, shim: bool) -> None:
    assert is_shim_workspace(path) is shim


def test_shim_workspaces_and_their_transcripts_are_filtered_from_the_unfiltered_listing(state: Path) -> None:
    write_store(state, {"/tmp/agy-openai-shim/agy-call-1": "c-shim", "/home/u/p": "c-real"})
    write_transcript(state, "c-shim", "shim", 1_800_000_000)
    write_transcript(state, "c-real", "real", 1_700_000_000)
    assert [c.id for c in list_conversations(state, 20).conversations] == ["c-real"]


def test_asking_for_a_workspace_by_path_shows_it_even_when_it_is_a_shim(state: Path, tmp_path: Path) -> None:
    shim = tmp_path / "agy-openai-shim" / "agy-call-9"
    shim.mkdir(parents=True)
    write_store(state, {str(shim): "c-shim", "/home/u/p": "c-real"})
    assert [c.id for c in list_conversations(state, 20, cwd=shim).conversations] == ["c-shim"]


def test_a_torn_read_is_retried(state: Path) -> None:
    path = write_store(state, '{"/home/u/p": "c-')
    pauses: list[float] = []

    def writer_finishes(seconds: float) -> None:
        pauses.append(seconds)
        path.write_text('{"/home/u/p": "c-1"}', encoding="utf-8")

    assert read_last_conversations(state, sleep=writer_finishes) == {"/home/u/p": "c-1"}
    assert len(pauses) == 1


def test_a_store_that_stays_unreadable_is_an_error_and_the_listing_says_so(state: Path) -> None:
    write_store(state, "[not an object")
    with pytest.raises(StoreUnreadable):
        read_last_conversations(state, sleep=lambda _: None)
    write_transcript(state, "c-1", "q", 1_700_000_000)
    listing = list_conversations(state, 20)
    assert [c.id for c in listing.conversations] == ["c-1"]
    assert listing.notices and "could not be read" in listing.notices[0]


def test_latest_for_cwd_uses_the_physical_path(state: Path, tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    link = tmp_path / "link"
    link.symlink_to(real)
    write_store(state, {str(real): "c-1"})
    assert latest_for_cwd(state, link) == "c-1"
    assert latest_for_cwd(state, tmp_path) is None


@pytest.mark.anyio
async def test_runs_of_the_fake_agy_show_up_in_the_backends_listing(world: AgyWorld) -> None:
    backend = world.backend()
    engine = RunEngine({BackendName("agy"): backend}, max_concurrent=1)
    with anyio.fail_after(20):
        record = engine.new_record(
            RunSpec(tool="gemini-ask", prompt="first question", cwd=world.project), BackendName("agy")
        )
        outcome = await engine.execute(record)
        listing = await backend.conversations(10)
    (conversation,) = listing.conversations
    assert conversation.id == outcome.conversation_id
    assert (conversation.cwd, conversation.first_prompt) == (str(world.project.resolve()), "first question")
    assert latest_for_cwd(world.state_dir, world.project) == outcome.conversation_id
