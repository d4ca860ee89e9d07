"""Start a job's supervisor as a detached process: new session, stdin /dev/null, output to the job's log."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from gemini_relay.jobs.fs_store import ERR


def start_detached(
    job_dir: Path, env: Mapping[str, str], pass_fds: Sequence[int] = (), claim_fd: int | None = None
) -> subprocess.Popen[bytes]:
    """Re-exec this program as `run-job <dir>`; it keeps running if the server exits or is killed.

    The caller keeps the Popen only to reap the child if it finishes while the server lives.
    """
    claim = [claim_fd] if claim_fd is not None else []
    log = (job_dir / ERR).open("ab")
    try:
        return subprocess.Popen(
            [
                sys.executable,
                "-m",
                "gemini_relay",
                "run-job",
                str(job_dir),
                *(f"--lock-fd={fd}" for fd in pass_fds),
                *(f"--claim-fd={fd}" for fd in claim),
            ],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            cwd=job_dir,
            env=dict(env),
            start_new_session=True,
            close_fds=True,
            pass_fds=(*pass_fds, *claim),
        )
    finally:
        log.close()
