"""How a JobManager hands a job to its supervisor: the claim, the conversation lock, and the start itself.

DetachedSpawner is the real one (a `gemini-relay run-job` process in its own session, outliving the server); tests
inject another (the supervisor run in-process) to drive the manager over a MemoryJobStore.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from gemini_relay.jobs.fs_store import FileJobStore
from gemini_relay.jobs.locks import acquire_conversation_lock, try_claim_job
from gemini_relay.jobs.spawn import start_detached


class Child(Protocol):
    def poll(self) -> int | None: ...


class Spawner(Protocol):
    def claim(self, job_id: str) -> int | None:
        """A descriptor holding the job's exclusive claim, or None while another supervisor holds it."""
        ...

    def lock_conversation(self, conversation_id: str) -> int:
        """A descriptor holding the conversation's lock; raises JobConflict when it is busy."""
        ...

    def start(self, job_id: str, lock_fds: Sequence[int], claim_fd: int) -> Child:
        """Start the job's supervisor, handing it the locks and the claim."""
        ...


class DetachedSpawner:
    def __init__(self, store: FileJobStore, env: Mapping[str, str]) -> None:
        self._store = store
        self._env = dict(env)

    def claim(self, job_id: str) -> int | None:
        return try_claim_job(self._store.dir(job_id))

    def lock_conversation(self, conversation_id: str) -> int:
        return acquire_conversation_lock(self._store.locks, conversation_id)

    def start(self, job_id: str, lock_fds: Sequence[int], claim_fd: int) -> Child:
        return start_detached(self._store.dir(job_id), self._env, pass_fds=lock_fds, claim_fd=claim_fd)
