"""A host that replaces a drained one (a relay of another version asked it to drain) shares the machine with it
until the predecessor's last run ends: each run the predecessor still has (running, or queued in its engine) holds a
slot of this host's cap, so the two never run more than GEMINI_RELAY_MAX_CONCURRENT together."""

from __future__ import annotations

import os
from pathlib import Path

from anyio.abc import TaskStatus

from gemini_relay.core.vocabulary import BackendName
from gemini_relay.jobs.engine.engine import RunEngine
from gemini_relay.jobs.store.job_manager import poll_until
from gemini_relay.jobs.store.job_status import derive_status
from gemini_relay.jobs.store.job_store import JobNotFound, JobStore
from gemini_relay.log import logger
from gemini_relay.supervise.liveness import is_alive


def predecessor_jobs(store: JobStore) -> list[tuple[str, BackendName]]:
    """The unfinished jobs another live shared host runs or has queued (never a server's own host: that one runs
    outside the shared cap by choice, GEMINI_RELAY_HOST=off)."""
    found: list[tuple[str, BackendName]] = []
    for job_id in store.job_ids():
        try:
            if derive_status(store, job_id).state.terminal:
                continue
            meta = store.meta(job_id)
            executor = store.supervisor(job_id) or meta.owner
        except JobNotFound:
            continue
        if executor is None or executor.pid == os.getpid() or not is_alive(executor):
            continue
        if is_shared_host(executor.pid):
            found.append((job_id, meta.backend))
    return found


def is_shared_host(pid: int) -> bool:
    """The process is a `gemini-relay host` (the state dir's shared host, of any version)."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return is_host_argv(argv)


def is_host_argv(argv: list[bytes]) -> bool:
    """A relay host's /proc cmdline, split at NULs: `… host`, with `--detach` when a server started it."""
    return argv[-2:] == [b"host", b""] or argv[-3:] == [b"host", b"--detach", b""]


async def hold_for(
    store: JobStore, engine: RunEngine, job_id: str, backend: BackendName, *, task_status: TaskStatus[None]
) -> None:
    """Hold one of `backend`'s slots until the predecessor's job ends. Started before the host accepts a
    connection: its turn in the slot's FIFO comes before that of any run the host is asked for."""
    task_status.started()
    async with engine.hold(backend):
        await poll_until(lambda: derive_status(store, job_id), lambda s: s.state.terminal)
    logger.info("The drained host's job %s ended: its slot is this host's again", job_id)
