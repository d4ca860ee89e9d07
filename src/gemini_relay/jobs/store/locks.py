"""One run per conversation at a time, across server processes: an advisory flock per conversation id.

The server takes the lock when the job is created (so a second continuation is refused at once, not queued) and
hands the descriptor to the supervisor, which holds it until it exits. Lock files are never unlinked: unlinking a
flock file races with a second locker.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import os
from pathlib import Path

from gemini_relay.errors import RunFailed
from gemini_relay.jobs.store.job_store import JobConflict


def acquire_conversation_lock(locks_dir: Path, conversation_id: str) -> int:
    """An open descriptor holding the conversation's exclusive lock.

    Raises:
        JobConflict: another run of this conversation is in flight (in any server sharing the state dir).
        RunFailed: the lock could not be taken at all (e.g. a filesystem without flock): refused, never skipped.
    """
    name = hashlib.sha256(conversation_id.encode("utf-8")).hexdigest()[:32]
    path = locks_dir / f"conv-{name}.lock"
    fd = -1
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise JobConflict(
            f"Conversation {conversation_id} already has a run in flight; wait for it to finish (or cancel it) "
            "before continuing the conversation."
        ) from None
    except OSError as exc:  # the lock file cannot be opened, or flock fails (NFS): refused either way
        if fd >= 0:
            os.close(fd)
        raise RunFailed(f"Could not lock conversation {conversation_id} ({exc.strerror}); refusing to start.") from exc
    return fd


SUPERVISOR_CLAIM = "supervisor.lock"


def try_lock_file(path: Path) -> int | None:
    """An open descriptor (close-on-exec) holding an exclusive flock on `path` (created 0600), or None while another
    holds it. The one non-blocking file lock of the relay: the host's, a job's claim, a task's."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError as exc:  # a link at the lock's name is never followed: nobody can hold this lock
        if exc.errno != errno.ELOOP:
            raise
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return fd


def try_claim_job(job_dir: Path) -> int | None:
    """An open descriptor holding the job's exclusive claim, or None while someone else holds it.

    Whoever holds the claim has the right to run the job: the executor (a relay host) that creates or adopts it
    holds it for as long as it runs it, so a job never runs in two executors at once.
    """
    return try_lock_file(job_dir / SUPERVISOR_CLAIM)
