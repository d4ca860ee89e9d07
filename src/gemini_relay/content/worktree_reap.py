"""Maintenance of isolated-run worktrees: one whose job is gone (swept after its TTL) or never came to be is removed.

A worktree is kept while a job in the store ran (or runs) in it — the job's own record names it as its cwd, so it
expires with that job — and, before its job is registered, while its creator lives and it is younger than the TTL.
After a crash (the server or the relay host killed mid-run) the job ends interrupted and is swept with the others;
its worktree goes at the next pass.
"""

from __future__ import annotations

import time
from pathlib import Path

import anyio

from gemini_relay.content.git_diff import GitError
from gemini_relay.content.worktree import Worktree, Worktrees
from gemini_relay.jobs.store.job_status import derive_status
from gemini_relay.jobs.store.job_store import JobNotFound, JobStore
from gemini_relay.log import logger
from gemini_relay.supervise.liveness import is_alive


def job_cwds(store: JobStore | None) -> list[Path]:
    """The working directory of every job the store keeps."""
    found: list[Path] = []
    if store is None:
        return found
    for job_id in store.job_ids():
        try:
            found.append(store.meta(job_id).spec.cwd)
        except (JobNotFound, OSError, ValueError):
            continue
    return found


def running_in(store: JobStore | None, worktree: Worktree) -> str | None:
    """A job of the store still running (or queued) in the worktree, if any: it must end before the worktree is
    applied or removed."""
    if store is None:
        return None
    for job_id in store.job_ids():
        try:
            inside = store.meta(job_id).spec.cwd.is_relative_to(worktree.path)
            if inside and not derive_status(store, job_id).state.terminal:
                return job_id
        except (JobNotFound, OSError, ValueError):
            continue
    return None


def stale(worktrees: list[Worktree], cwds: list[Path], ttl: float, now: float) -> list[Worktree]:
    """The worktrees no kept job ran in, whose creator is gone or that are older than the TTL."""
    found: list[Worktree] = []
    for worktree in worktrees:
        if any(cwd.is_relative_to(worktree.path) for cwd in cwds):
            continue
        starting = worktree.owner is not None and is_alive(worktree.owner) and now - worktree.created_at < ttl
        if not starting:
            found.append(worktree)
    return found


async def reap(worktrees: Worktrees, store: JobStore | None, ttl: float, *, now: float | None = None) -> list[str]:
    """Remove the stale worktrees (and their branches); returns their branch names."""
    records = worktrees.records()
    if not records:
        return []
    cwds = await anyio.to_thread.run_sync(job_cwds, store)
    removed: list[str] = []
    for worktree in stale(records, cwds, ttl, time.time() if now is None else now):
        try:
            await worktrees.discard(worktree)
        except (GitError, OSError) as exc:  # the next pass tries again
            logger.info("Worktree %s not removed yet: %s", worktree.name, exc)
            continue
        removed.append(worktree.branch)
    if removed:
        logger.info("Removed %d worktree(s) of ended or abandoned runs", len(removed))
    return removed
