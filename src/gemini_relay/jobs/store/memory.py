"""MemoryJobStore: the reference JobStore, in one process's memory, with FileJobStore's semantics.

It is not durable and not shared between processes, so the server never uses it for real jobs; it states the store
contract without a filesystem (the conformance suite runs against both stores) and serves tests of the layers above.
Records are copied on the way in and out, as a file store would, so a caller cannot change a stored record in place.
"""

from __future__ import annotations

import copy
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from gemini_relay.jobs.store.job_store import IdempotencyBinding, JobConflict, JobMeta, JobNotFound, JobResult, Progress
from gemini_relay.supervise.liveness import ProcessInfo


@dataclass
class _Job:
    meta: JobMeta
    supervisor: ProcessInfo | None = None
    progress: Progress | None = None
    chunks: list[str] = field(default_factory=list[str])
    result: JobResult | None = None  # set together with finished_at: the result and its sentinel are one step
    finished_at: float | None = None
    cancel: bool = False
    collected: bool = False
    dismissed: bool = False


def _check_id(job_id: str) -> None:
    """The same names FileJobStore accepts (one plain path component): anything else is never a job."""
    if not job_id or "/" in job_id or job_id.startswith(".") or "\0" in job_id:
        raise JobNotFound(job_id)


class MemoryJobStore:
    def __init__(self) -> None:
        self._files: dict[str, list[str]] = {}
        self._lock = threading.Lock()
        self._jobs: dict[str, _Job] = {}
        self._keys: dict[str, IdempotencyBinding] = {}

    def _job(self, job_id: str) -> _Job:
        _check_id(job_id)
        job = self._jobs.get(job_id)
        if job is None:
            raise JobNotFound(job_id)
        return job

    def _maybe(self, job_id: str) -> _Job | None:
        _check_id(job_id)
        return self._jobs.get(job_id)

    def _flag(self, job_id: str, read: Callable[[_Job], bool]) -> bool:
        """A flag of the job; an unknown job has none set."""
        with self._lock:
            job = self._maybe(job_id)
            return job is not None and read(job)

    def create(self, meta: JobMeta) -> None:
        _check_id(meta.job_id)
        with self._lock:
            if meta.job_id in self._jobs:
                raise JobConflict(f"job {meta.job_id} already exists")
            self._jobs[meta.job_id] = _Job(meta=copy.deepcopy(meta))

    def meta(self, job_id: str) -> JobMeta:
        with self._lock:
            return copy.deepcopy(self._job(job_id).meta)

    def job_ids(self) -> list[str]:
        with self._lock:
            return list(self._jobs)

    def write_supervisor(self, job_id: str, info: ProcessInfo) -> None:
        with self._lock:
            self._job(job_id).supervisor = info

    def supervisor(self, job_id: str) -> ProcessInfo | None:
        with self._lock:
            return self._job(job_id).supervisor

    def write_progress(self, job_id: str, progress: Progress) -> None:
        with self._lock:
            self._job(job_id).progress = progress

    def progress(self, job_id: str) -> Progress | None:
        with self._lock:
            return self._job(job_id).progress

    def append_text(self, job_id: str, text: str) -> None:
        with self._lock:
            self._job(job_id).chunks.append(text)

    def text(self, job_id: str) -> str:
        with self._lock:
            return "".join(self._job(job_id).chunks)

    def record_files(self, job_id: str, paths: list[str]) -> None:
        with self._lock:
            known = self._files.setdefault(job_id, [])
            known.extend(p for p in paths if p not in known)

    def files(self, job_id: str) -> list[str]:
        with self._lock:
            return list(self._files.get(job_id, []))

    def read_output(self, job_id: str, offset: int) -> bytes:
        return self.text(job_id).encode("utf-8")[offset:]

    def write_result(self, job_id: str, result: JobResult) -> None:
        with self._lock:
            job = self._job(job_id)
            job.result = copy.deepcopy(result)
            job.finished_at = time.time()
            job.meta = replace(job.meta, env=None)  # as on disk: a finished job keeps no secrets

    def forget_env(self, job_id: str) -> None:
        with self._lock:
            job = self._jobs.get(job_id)
            if job is not None:
                job.meta = replace(job.meta, env=None)

    def result(self, job_id: str) -> JobResult | None:
        with self._lock:
            return copy.deepcopy(self._job(job_id).result)

    def request_cancel(self, job_id: str) -> None:
        with self._lock:
            self._job(job_id).cancel = True

    def cancel_requested(self, job_id: str) -> bool:
        return self._flag(job_id, lambda job: job.cancel)

    def mark_collected(self, job_id: str) -> None:
        with self._lock:
            self._job(job_id).collected = True

    def collected(self, job_id: str) -> bool:
        return self._flag(job_id, lambda job: job.collected)

    def mark_dismissed(self, job_id: str) -> None:
        with self._lock:
            self._job(job_id).dismissed = True

    def dismissed(self, job_id: str) -> bool:
        return self._flag(job_id, lambda job: job.dismissed)

    def finished_at(self, job_id: str) -> float | None:
        with self._lock:
            job = self._maybe(job_id)
            return job.finished_at if job is not None else None

    def delete(self, job_id: str) -> None:
        with self._lock:
            self._files.pop(job_id, None)
            job = self._maybe(job_id)
            if job is None:
                return
            key = job.meta.idempotency_key
            if key is not None and (binding := self._keys.get(key)) is not None and binding.job_id == job_id:
                del self._keys[key]  # only this job's own binding goes
            del self._jobs[job_id]

    def bound_job(self, key: str) -> str | None:
        with self._lock:
            existing = self._keys.get(key)
            return existing.job_id if existing is not None and existing.job_id in self._jobs else None

    def bind_idempotency(self, key: str, job_id: str, request_hash: str) -> str:
        """Bind `key` to `job_id`; an existing binding for the same request wins and its job id is returned.

        Raises:
            JobConflict: the key is bound to a different request.
        """
        with self._lock:
            existing = self._keys.get(key)
            if existing is not None and existing.job_id in self._jobs:
                if existing.request_hash != request_hash:
                    raise JobConflict(
                        f"idempotencyKey is already bound to a different request (job {existing.job_id}); "
                        "use a new key for a new request"
                    )
                return existing.job_id
            self._keys[key] = IdempotencyBinding(job_id=job_id, request_hash=request_hash)  # new, or its job is gone
            return job_id

    def unbind_idempotency(self, key: str) -> None:
        with self._lock:
            self._keys.pop(key, None)
