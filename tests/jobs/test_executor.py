"""The one executor, in memory: a server's RunFollower creates each run in the relay host and attaches to it. Here
the host runs inside the test (GEMINI_RELAY_HOST=off: the same code the shared host runs) with a scripted backend, so
nothing is spawned; the real store is on disk."""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest

from gemini_relay.app import ServersOwnHost, build_deps
from gemini_relay.config import Settings
from gemini_relay.core.spec import RunSpec
from gemini_relay.core.vocabulary import BackendName, RunState
from gemini_relay.errors import InputError, RelayError
from gemini_relay.jobs.engine.engine import RunEngine
from gemini_relay.jobs.engine.runners import JobOptions
from gemini_relay.jobs.follower import WATCHED, RunFollower
from gemini_relay.jobs.store.job_store import JobConflict
from gemini_relay.tools.common.context import Deps
from tests.inmemory.scripted import Script, ScriptedBackend, answer, held_backend

pytestmark = pytest.mark.anyio
BOUND = 10.0


@asynccontextmanager
async def executor(tmp_path: Path, backend: ScriptedBackend) -> AsyncIterator[Deps]:
    env = {"HOME": str(tmp_path), "PATH": str(tmp_path), "GEMINI_RELAY_STATE_DIR": str(tmp_path / "state"),
           "GEMINI_RELAY_HOST": "off", "GEMINI_MCP_BACKEND": "gemini", "GEMINI_RELAY_MAX_CONCURRENT": "1"}  # fmt: skip
    deps = build_deps(Settings.from_env(env, cwd=tmp_path), backends={BackendName("gemini"): backend})
    with anyio.fail_after(BOUND):
        async with deps.serving():
            yield deps


def spec(tmp_path: Path, prompt: str = "p", conversation: str | None = None) -> RunSpec:
    return RunSpec(tool="gemini-run", prompt=prompt, cwd=tmp_path, conversation_id=conversation)


async def test_a_run_is_created_in_the_hosts_engine_and_collected_with_its_whole_answer(tmp_path: Path) -> None:
    backend = ScriptedBackend()
    backend.queue(answer("the whole answer", pieces=3))
    async with executor(tmp_path, backend) as deps:
        assert deps.jobs is not None and deps.own_host is not None
        record = await deps.runs.register(spec(tmp_path), BackendName("gemini"))
        outcome = await deps.runs.execute(record)
        status = deps.jobs.status(record.run_id)
    assert outcome.text == "the whole answer"
    assert status.state is RunState.DONE and status.text == "the whole answer"
    supervisor = deps.jobs.store.supervisor(record.run_id)
    assert supervisor is not None and supervisor.shared  # the executor, never a per-job process


async def test_the_server_holds_a_proxy_and_only_the_host_has_an_engine(tmp_path: Path) -> None:
    """One code path: the server's side is a RunFollower (no queue, no cap, no second fold); the run is admitted by
    the host's RunEngine, whether that host is the user's shared one or, as here, the server's own."""
    backend, hold = held_backend("held")
    async with executor(tmp_path, backend) as deps, anyio.create_task_group() as tg:
        assert isinstance(deps.runs, RunFollower) and not isinstance(deps.runs, RunEngine)
        assert isinstance(deps.own_host, ServersOwnHost)
        record = await deps.runs.register(spec(tmp_path), BackendName("gemini"))
        tg.start_soon(deps.runs.execute, record)
        with anyio.fail_after(BOUND):
            while [r.run_id for r in deps.own_host.host.engine.active] != [record.run_id]:
                await anyio.sleep(0.01)  # the host admits the run in its own task: its engine is all there is
        hold.set()


async def test_a_refused_request_creates_no_job(tmp_path: Path) -> None:
    async with executor(tmp_path, ScriptedBackend()) as deps:
        assert deps.jobs is not None
        with pytest.raises(InputError):
            await deps.runs.register(spec(tmp_path, "x", conversation="not/a valid id\n"), BackendName("gemini"))
        assert deps.jobs.store.job_ids() == []


async def test_the_same_idempotency_key_returns_the_same_job_and_another_request_is_refused(tmp_path: Path) -> None:
    backend, hold = held_backend("held")
    async with executor(tmp_path, backend) as deps:
        assert deps.jobs is not None
        first = await deps.runs.register(spec(tmp_path), BackendName("gemini"), JobOptions(idempotency_key="k"))
        again = await deps.runs.register(spec(tmp_path), BackendName("gemini"), JobOptions(idempotency_key="k"))
        assert again.reused_job and again.run_id == first.run_id
        with pytest.raises(JobConflict):
            await deps.runs.register(spec(tmp_path, "other"), BackendName("gemini"), JobOptions(idempotency_key="k"))
        assert deps.jobs.store.job_ids() == [first.run_id]
        hold.set()


async def test_a_busy_conversation_refuses_a_second_continuation_at_once(tmp_path: Path) -> None:
    backend, hold = held_backend("held")
    async with executor(tmp_path, backend) as deps:
        await deps.runs.register(spec(tmp_path, conversation="conv-1"), BackendName("gemini"))
        with pytest.raises(JobConflict, match="already has a run in flight"):
            await deps.runs.register(spec(tmp_path, "again", conversation="conv-1"), BackendName("gemini"))
        hold.set()


async def test_a_run_cancelled_while_queued_behind_the_cap_ends_cancelled(
    tmp_path: Path,
) -> None:
    backend, hold = held_backend("held")
    async with executor(tmp_path, backend) as deps, anyio.create_task_group() as tg:
        assert deps.jobs is not None
        first = await deps.runs.register(spec(tmp_path, "first"), BackendName("gemini"))
        tg.start_soon(deps.runs.execute, first)
        queued = await deps.runs.register(spec(tmp_path, "queued"), BackendName("gemini"))
        status = await deps.jobs.cancel(queued.run_id)
        hold.set()
    assert status.state is RunState.CANCELLED


async def test_a_continuation_whose_conversation_lock_cannot_be_taken_is_refused_and_leaves_no_job(
    tmp_path: Path,
) -> None:
    backend = ScriptedBackend()
    async with executor(tmp_path, backend) as deps:
        assert deps.jobs is not None
        name = hashlib.sha256(b"conv-2").hexdigest()[:32]
        (tmp_path / "state" / "locks" / f"conv-{name}.lock").mkdir(parents=True)  # the lock file cannot be opened
        with pytest.raises(RelayError, match=r"Could not lock conversation conv-2 \(.+\); refusing to start"):
            await deps.runs.register(spec(tmp_path, conversation="conv-2"), BackendName("gemini"))
        fresh = await deps.runs.register(spec(tmp_path, "fresh"), BackendName("gemini"))  # takes no lock
        assert list(deps.jobs.store.job_ids()) == [fresh.run_id]
        await deps.jobs.cancel(fresh.run_id)


LONG_ANSWER = "".join(
    f"line {i:06d} of an answer past what a socket frame or a keepalive quotes\n" for i in range(4000)
)


async def test_a_long_answer_crosses_whole_in_the_hosts_result_message(tmp_path: Path) -> None:
    """The host folds the run's events once: a server attached to the run gets its record's changes as they come,
    and the result with its whole text (never left out for the server to rebuild from a fold of its own)."""
    hold = anyio.Event()
    backend = ScriptedBackend()
    backend.queue(Script(deltas=_pieces(LONG_ANSWER), hold=hold))
    async with executor(tmp_path, backend) as deps:
        assert deps.jobs is not None
        record = await deps.runs.register(spec(tmp_path), BackendName("gemini"))
        channel = await deps.jobs.client.open()
        try:
            await channel.send({"op": "run", "job_id": record.run_id, "env": {}})
            messages = [await channel.receive()]
            while "result" not in messages[-1]:
                hold.set()  # attached while the run is live: its stream, not the stored result
                messages.append(await channel.receive())
        finally:
            await channel.aclose()
    assert len(LONG_ANSWER) > 256 * 1024
    assert messages[-1] == {"result": messages[-1]["result"]} and messages[-1]["result"]["text"] == LONG_ANSWER
    assert [set(m) for m in messages[:-1]] == [{"progress"}] * (len(messages) - 1)  # no event crosses


def _pieces(text: str, size: int = 9000) -> tuple[str, ...]:
    return tuple(text[i : i + size] for i in range(0, len(text), size))


async def test_the_servers_record_follows_the_hosts_and_the_call_returns_the_whole_answer(tmp_path: Path) -> None:
    hold = anyio.Event()
    backend = ScriptedBackend()
    backend.queue(Script(deltas=_pieces(LONG_ANSWER), hold=hold))
    async with executor(tmp_path, backend) as deps, anyio.create_task_group() as tg:
        assert deps.own_host is not None
        record = await deps.runs.register(spec(tmp_path), BackendName("gemini"))
        outcome: list[str] = []

        async def execute() -> None:
            outcome.append((await deps.runs.execute(record)).text)

        tg.start_soon(execute)
        with anyio.fail_after(BOUND):
            while record.text != LONG_ANSWER:
                await anyio.sleep(0.01)  # the host's changes arrive on the server's own channel
        assert isinstance(deps.own_host, ServersOwnHost)
        hosts = deps.own_host.host.runner.live[record.run_id].record
        assert (record.state, record.session_id, record.tail) == (RunState.RUNNING, hosts.session_id, hosts.tail)
        hold.set()
    assert outcome == [LONG_ANSWER]


async def test_a_run_nobody_watches_is_attached_quietly_and_gets_its_result_alone(tmp_path: Path) -> None:
    """Every message wakes the server: a call without a progressToken (nothing shows its progress) gets only the
    result from the host, with the whole text, the session and the model."""
    hold = anyio.Event()
    backend = ScriptedBackend()
    backend.queue(Script(deltas=_pieces(LONG_ANSWER), hold=hold))
    async with executor(tmp_path, backend) as deps:
        assert deps.jobs is not None
        record = await deps.runs.register(spec(tmp_path), BackendName("gemini"))
        channel = await deps.jobs.client.open()
        try:
            await channel.send({"op": "run", "job_id": record.run_id, "env": {}, "quiet": True})
            hold.set()
            with anyio.fail_after(BOUND):
                messages = [await channel.receive()]
        finally:
            await channel.aclose()
    assert set(messages[0]) == {"result"} and messages[0]["result"]["text"] == LONG_ANSWER


async def test_a_call_without_a_progress_token_attaches_quietly_and_returns_the_whole_answer(tmp_path: Path) -> None:
    backend = ScriptedBackend()
    backend.queue(Script(deltas=_pieces(LONG_ANSWER)))
    async with executor(tmp_path, backend) as deps:
        record = await deps.runs.register(spec(tmp_path), BackendName("gemini"))
        watched = WATCHED.set(False)
        try:
            with anyio.fail_after(BOUND):
                result = await deps.runs.execute(record)
        finally:
            WATCHED.reset(watched)
    assert result.text == LONG_ANSWER and record.text == ""  # no change of the host's record crossed
    assert record.session_id == result.conversation_id is not None
