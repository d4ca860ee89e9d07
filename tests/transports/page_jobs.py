"""Jobs written straight into a state dir, as a supervisor would leave them, for the page's tests."""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path

from gemini_relay.core.receipt import Receipt
from gemini_relay.core.result import RunResult
from gemini_relay.core.spec import RunSpec
from gemini_relay.core.vocabulary import BackendName, RunState
from gemini_relay.jobs.store.file_store import FileJobStore
from gemini_relay.jobs.store.job_store import JobMeta, JobResult, Progress
from gemini_relay.supervise.liveness import describe


def new_job(store: FileJobStore, cwd: Path, tool: str = "gemini-run", model: str = "gemini-2.5-pro") -> str:
    job_id = uuid.uuid4().hex[:12]
    spec = RunSpec(tool=tool, prompt="a prompt", cwd=cwd, model=model)
    store.create(JobMeta(job_id=job_id, tool=tool, backend=BackendName("gemini"), spec=spec, created_at=time.time()))
    return job_id


def finished_job(
    store: FileJobStore, cwd: Path, text: str, files: tuple[Path, ...] = (), receipt: Receipt | None = None, **meta: str
) -> str:
    job_id = new_job(store, cwd, **meta)
    result = RunResult(
        state=RunState.DONE, text=text, conversation_id="conv-1", model="gemini-2.5-pro", receipt=receipt
    )
    now = time.time()
    store.write_result(job_id, JobResult(result, started_at=now - 3.2, ended_at=now))
    if files:
        store.record_files(job_id, [str(p) for p in files])
    return job_id


def running_job(store: FileJobStore, cwd: Path) -> str:
    """A job whose supervisor is this test process (alive), streaming text."""
    job_id = new_job(store, cwd)
    store.write_supervisor(job_id, describe(os.getpid()))
    store.write_progress(job_id, Progress(state=RunState.RUNNING, session_id="conv-2", started_at=time.time()))
    return job_id
