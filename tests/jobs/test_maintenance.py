"""Store housekeeping: the TTL sweep takes finished jobs only, and queued jobs of dead servers are found for adoption.

Time is passed in (`now=`), never waited for. Owners and supervisors are real processes: this test process (alive)
or a reaped child (dead).
"""

from __future__ import annotations

import os
import time
from dataclasses import replace
from pathlib import Path

import pytest

from gemini_relay.core.vocabulary import RunState
from gemini_relay.jobs.store.file_store import FileJobStore
from gemini_relay.jobs.store.job_store import JobConflict, JobStore, Progress
from gemini_relay.jobs.store.maintenance import orphaned_queued, sweep
from gemini_relay.jobs.store.memory import MemoryJobStore
from gemini_relay.supervise.liveness import ProcessInfo, describe
from tests.jobs.store_conformance import full_meta, full_result
from tests.supervise.test_liveness import gone_process

TTL = 3600.0
FAR_FUTURE = 10 * 365 * 86400.0


@pytest.fixture(params=["file", "memory"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> JobStore:
    return FileJobStore(tmp_path / "state") if request.param == "file" else MemoryJobStore()


def me() -> ProcessInfo:
    return describe(os.getpid())


def add(store: JobStore, job_id: str, *, owner: ProcessInfo | None = None, created_at: float | None = None) -> None:
    meta = full_meta(job_id)
    store.create(replace(meta, owner=owner, created_at=meta.created_at if created_at is None else created_at))


def finished(store: JobStore, job_id: str, state: RunState = RunState.DONE) -> float:
    add(store, job_id)
    store.write_result(job_id, full_result(state))
    ended = store.finished_at(job_id)
    assert ended is not None
    return ended


def test_finished_jobs_past_the_ttl_are_swept_whatever_their_outcome(store: JobStore) -> None:
    outcomes = (("d", RunState.DONE), ("f", RunState.FAILED), ("c", RunState.CANCELLED))
    ended = max(finished(store, job_id, state) for job_id, state in outcomes)
    removed = sweep(store, TTL, now=ended + TTL + 1)
    assert sorted(removed) == ["c", "d", "f"]
    assert store.job_ids() == []


def test_a_finished_job_is_kept_until_its_ttl_has_passed(store: JobStore) -> None:
    ended = finished(store, "done")
    assert sweep(store, TTL, now=ended + TTL - 1) == []
    assert store.job_ids() == ["done"]
    assert sweep(store, TTL, now=ended + TTL) == ["done"]


def test_the_ttl_counts_from_the_end_of_the_run_not_its_creation(store: JobStore) -> None:
    add(store, "old-but-fresh", created_at=0.0)  # created long ago, finished just now
    store.write_result("old-but-fresh", full_result())
    ended = store.finished_at("old-but-fresh")
    assert ended is not None
    assert sweep(store, TTL, now=ended + 1) == []


def test_running_and_queued_jobs_are_never_swept(store: JobStore) -> None:
    add(store, "queued", owner=me(), created_at=0.0)
    add(store, "queued-orphan", owner=gone_process(), created_at=0.0)
    add(store, "starting", created_at=0.0)
    store.write_supervisor("starting", me())
    add(store, "running", created_at=0.0)
    store.write_supervisor("running", me())
    store.write_progress("running", Progress(state=RunState.RUNNING, started_at=0.0))
    assert sweep(store, TTL, now=FAR_FUTURE) == []
    assert sorted(store.job_ids()) == ["queued", "queued-orphan", "running", "starting"]


def test_a_job_interrupted_by_its_supervisors_death_is_swept_as_finished(store: JobStore) -> None:
    add(store, "interrupted", created_at=1000.0)
    store.write_supervisor("interrupted", gone_process())
    assert sweep(store, TTL, now=1000.0 + TTL - 1) == []
    assert sweep(store, TTL, now=1000.0 + TTL) == ["interrupted"]


def test_a_swept_jobs_idempotency_key_is_free_for_a_new_request(store: JobStore) -> None:
    meta = full_meta("keyed", key="key", request_hash="h1")
    store.create(meta)
    store.bind_idempotency("key", "keyed", "h1")
    store.write_result("keyed", full_result())
    add(store, "next")
    with pytest.raises(JobConflict):
        store.bind_idempotency("key", "next", "h2")
    ended = store.finished_at("keyed")
    assert ended is not None
    sweep(store, TTL, now=ended + TTL)
    assert store.bind_idempotency("key", "next", "h2") == "next"


def test_the_sweep_leaves_the_key_of_a_live_job_bound(store: JobStore) -> None:
    store.create(full_meta("live", key="key", request_hash="h1"))
    store.bind_idempotency("key", "live", "h1")
    store.write_supervisor("live", me())
    sweep(store, TTL, now=FAR_FUTURE)
    add(store, "next")
    assert store.bind_idempotency("key", "next", "h1") == "live"


def test_queued_jobs_of_a_dead_owner_are_orphans_oldest_first(store: JobStore) -> None:
    dead = gone_process()
    add(store, "newer", owner=dead, created_at=200.0)
    add(store, "older", owner=dead, created_at=100.0)
    add(store, "ownerless", owner=None, created_at=150.0)
    assert orphaned_queued(store) == ["older", "ownerless", "newer"]


def test_queued_jobs_of_a_live_owner_are_not_orphans(store: JobStore) -> None:
    add(store, "mine", owner=me())
    assert orphaned_queued(store) == []


def test_a_queued_job_whose_owner_pid_was_recycled_is_an_orphan(store: JobStore) -> None:
    owner = me()
    assert owner.start_ticks is not None
    add(store, "recycled", owner=replace(owner, start_ticks=owner.start_ticks + 1))
    assert orphaned_queued(store) == ["recycled"]


def test_started_or_finished_jobs_of_a_dead_owner_are_not_orphans(store: JobStore) -> None:
    dead = gone_process()
    add(store, "started", owner=dead)
    store.write_supervisor("started", me())
    add(store, "interrupted", owner=dead)
    store.write_supervisor("interrupted", gone_process())
    add(store, "done", owner=dead)
    store.write_result("done", full_result())
    assert orphaned_queued(store) == []


def test_the_sweep_removes_the_environment_of_an_interrupted_job_before_its_ttl(store: JobStore) -> None:
    """A host killed mid-run writes no result, so nothing it ran removed the job's secrets; the next pass does."""
    now = time.time()
    store.create(replace(full_meta("interrupted"), created_at=now, env={"GEMINI_API_KEY": "secret"}))
    store.write_supervisor("interrupted", gone_process())
    queued = replace(full_meta("queued"), created_at=now, owner=gone_process(), env={"GEMINI_API_KEY": "adopter"})
    store.create(queued)
    assert sweep(store, TTL, now=now + 1) == []  # neither is past its TTL
    assert store.meta("interrupted").env is None
    assert store.meta("queued").env == {"GEMINI_API_KEY": "adopter"}  # whoever adopts it runs with it
