"""Store housekeeping at server start and periodically: sweep expired jobs (and the environment of every ended one),
find queued jobs of dead servers."""

from __future__ import annotations

import contextlib
import time

from gemini_relay.core.vocabulary import RunState
from gemini_relay.jobs.store.job_status import derive_status
from gemini_relay.jobs.store.job_store import JobNotFound, JobStore
from gemini_relay.log import logger
from gemini_relay.supervise.liveness import is_alive

SWEEP_INTERVAL = 600.0  # finished jobs are swept at start and every 10 minutes


def sweep(store: JobStore, ttl: float, *, now: float | None = None) -> list[str]:
    """Delete finished jobs older than `ttl` (their idempotency bindings go with them); never a running one. Every
    ended job's environment goes at once: an interrupted one still had it."""
    now = time.time() if now is None else now
    removed: list[str] = []
    for job_id in store.job_ids():
        try:
            status = derive_status(store, job_id, now=now)
        except JobNotFound:
            continue
        if not status.state.terminal:
            continue
        with contextlib.suppress(OSError):  # an interrupted job's: its executor died before it could remove them
            store.forget_env(job_id)  # secrets of a job nothing will start again
        ended = store.finished_at(job_id) or status.created_at
        if now - ended >= ttl:
            store.delete(job_id)
            removed.append(job_id)
    if removed:
        logger.info("Swept %d finished job(s) older than %.0fs", len(removed), ttl)
    return removed


def orphaned_queued(store: JobStore) -> list[str]:
    """Queued jobs whose owning server is gone (it died before starting them): they need a new owner."""
    found: list[str] = []
    for job_id in store.job_ids():
        try:
            status = derive_status(store, job_id)
            meta = store.meta(job_id)
        except JobNotFound:
            continue
        if status.state is RunState.QUEUED and (meta.owner is None or not is_alive(meta.owner)):
            found.append(job_id)
    return sorted(found, key=lambda j: store.meta(j).created_at)
