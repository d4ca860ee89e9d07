"""FileJobStore: one directory per job under the state dir; every record is a file with a single writer.

Records are replaced atomically (write a temp file, rename), and the exit sentinel is renamed in after the result,
so a reader that sees the sentinel always sees the whole result. A killed process (server, supervisor, host, CLI)
loses nothing: renames are atomic and the page cache outlives processes. Per-run records are not fsync'd (like
SQLite's synchronous=NORMAL): nine fsyncs per run cost a warm call more than its whole upstream round trip, and
only a machine crash could lose the last runs' records. Idempotency bindings, rare and small, are still fsync'd.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

from gemini_relay.core.text import replace_lone_surrogates
from gemini_relay.core.trusted_files import OTHERS_WRITE, load_trusted_json
from gemini_relay.core.vocabulary import RunState
from gemini_relay.jobs.store.job_store import (
    JobConflict,
    JobMeta,
    JobNotFound,
    JobResult,
    Progress,
    StoreUnwritable,
    dumps,
)
from gemini_relay.log import logger
from gemini_relay.supervise.liveness import ProcessInfo

META = "meta.json"
SUPERVISOR = "supervisor.json"
PROGRESS = "progress.json"
_PROGRESS_FIELDS = frozenset(f.name for f in fields(Progress))
OUT = "out.txt"
ERR = "supervisor.log"
RESULT = "result.json"
EXIT_CODE = "exit_code"
CANCEL = "cancel"
COLLECTED = "collected"
DISMISSED = "dismissed"
ENV = "env.json"  # the environment a job runs with (API keys): 0600, removed once the job has its result
FILES = "files.json"  # files a run made (e.g. gemini-image's saved copy), written by the server after the result


def write_atomic(path: Path, data: bytes, *, durable: bool = False) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with tmp.open("wb") as handle:
        handle.write(data)
        if durable:
            handle.flush()
            os.fsync(handle.fileno())
    tmp.replace(path)
    if durable:
        fsync_dir(path.parent)


def _write_private(path: Path, data: bytes) -> None:
    """A file only its owner may read, created so (never widened after the fact)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)


def _progress_json(progress: Progress) -> bytes:
    return dumps({**progress.__dict__, "state": progress.state.value})


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _read_json(path: Path) -> dict[str, Any] | None:
    # A job's meta is what its supervisor runs: a record read through a link, someone else's or one others may write
    # is ignored (with a warning) like a corrupt one. Group-write is the umask's doing (002), not another writer's.
    return load_trusted_json(path, what="the job record", mask=OTHERS_WRITE)


class FileJobStore:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.jobs = root / "jobs"
        self.keys = root / "keys"
        self.locks = root / "locks"
        # Jobs hold prompts and answers: only the owner may enter the store (files inside inherit that protection).
        root.mkdir(parents=True, exist_ok=True, mode=0o700)
        for directory in (self.jobs, self.keys, self.locks):
            directory.mkdir(exist_ok=True, mode=0o700)

    def dir(self, job_id: str) -> Path:
        if not job_id or "/" in job_id or job_id.startswith(".") or "\0" in job_id:
            raise JobNotFound(job_id)
        return self.jobs / job_id

    def _existing(self, job_id: str) -> Path:
        path = self.dir(job_id)
        if not (path / META).is_file():
            raise JobNotFound(job_id)
        return path

    def create(self, meta: JobMeta, *, supervisor: ProcessInfo | None = None, progress: Progress | None = None) -> None:
        """The job dir appears whole or not at all: built under a hidden name (job_ids skips it), then renamed.
        `supervisor` and `progress`: a job whose run is already underway appears so (never queued, so never adopted).

        Raises:
            JobConflict: the job exists.
            StoreUnwritable: the state dir is full or read-only; nothing of the job is left behind.
        """
        path = self.dir(meta.job_id)
        if path.exists():
            raise JobConflict(f"job {meta.job_id} already exists")
        building = self.jobs / f".new-{meta.job_id}.{os.getpid()}"
        try:
            building.mkdir(mode=0o700)
            write_atomic(building / META, dumps(meta.to_json()))
            if meta.env is not None:
                _write_private(building / ENV, dumps(dict(meta.env)))
            if supervisor is not None:
                write_atomic(building / SUPERVISOR, dumps(supervisor.__dict__))
            if progress is not None:
                write_atomic(building / PROGRESS, _progress_json(progress))
            try:
                building.rename(path)  # fails on a non-empty target: a job of that id won the race
            except OSError as exc:
                if path.exists():
                    raise JobConflict(f"job {meta.job_id} already exists") from exc
                raise
        except OSError as exc:
            raise StoreUnwritable(self.root, exc) from exc
        finally:
            shutil.rmtree(building, ignore_errors=True)  # gone after the rename; only a failed build leaves it

    def meta(self, job_id: str) -> JobMeta:
        path = self._existing(job_id)
        data = _read_json(path / META)
        if data is None:
            raise JobNotFound(job_id)
        try:
            meta = JobMeta.from_json(data)
        except (KeyError, TypeError, ValueError):  # valid JSON of the wrong shape: as unreadable as a torn file
            raise JobNotFound(job_id) from None
        env = _read_json(path / ENV)
        return replace(meta, env={str(k): str(v) for k, v in env.items()} if env else None)

    def job_ids(self) -> list[str]:
        # A hidden dir is a job still being built (create): not a job yet.
        return [p.name for p in self.jobs.iterdir() if not p.name.startswith(".") and (p / META).is_file()]

    def write_supervisor(self, job_id: str, info: ProcessInfo) -> None:
        write_atomic(self._existing(job_id) / SUPERVISOR, dumps(info.__dict__))

    def supervisor(self, job_id: str) -> ProcessInfo | None:
        data = _read_json(self._existing(job_id) / SUPERVISOR)
        if data is None:
            return None
        try:
            return ProcessInfo(pid=int(data["pid"]), start_ticks=data.get("start_ticks"), boot_id=data.get("boot_id"),
                               shared=bool(data.get("shared")))  # fmt: skip
        except (KeyError, TypeError, ValueError):  # the wrong shape: as unreadable as a torn file
            return None

    def write_progress(self, job_id: str, progress: Progress) -> None:
        write_atomic(self._existing(job_id) / PROGRESS, _progress_json(progress))

    def progress(self, job_id: str) -> Progress | None:
        data = _read_json(self._existing(job_id) / PROGRESS)
        if data is None:
            return None
        try:
            known = {k: v for k, v in data.items() if k in _PROGRESS_FIELDS}  # a newer relay's extra fields
            return Progress(**{**known, "state": RunState(data["state"])})
        except (KeyError, TypeError, ValueError):  # the wrong shape: as unreadable as a torn file
            return None

    def append_text(self, job_id: str, text: str) -> None:
        with (self._existing(job_id) / OUT).open("a", encoding="utf-8") as handle:
            handle.write(replace_lone_surrogates(text))  # one unencodable character must not lose the answer

    def text(self, job_id: str) -> str:
        try:
            return (self._existing(job_id) / OUT).read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            return ""

    def read_output(self, job_id: str, offset: int) -> bytes:
        try:
            with (self.dir(job_id) / OUT).open("rb") as handle:
                handle.seek(offset)
                return handle.read()
        except FileNotFoundError:
            return b""

    def write_result(self, job_id: str, result: JobResult) -> None:
        path = self._existing(job_id)
        write_atomic(path / RESULT, dumps(result.to_json()))
        write_atomic(path / EXIT_CODE, f"{result.exit_code}\n".encode())
        self.forget_env(job_id)  # nothing runs it any more: its secrets do not stay on disk

    def forget_env(self, job_id: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            (self.dir(job_id) / ENV).unlink()

    def result(self, job_id: str) -> JobResult | None:
        path = self._existing(job_id)
        if not (path / EXIT_CODE).is_file():
            return None
        data = _read_json(path / RESULT)
        return JobResult.from_json(data) if data is not None else None

    def record_files(self, job_id: str, paths: list[str]) -> None:
        """Record files the job produced (absolute paths), beside the result: the supervisor does not know them."""
        path = self._existing(job_id) / FILES
        known = self.files(job_id)
        write_atomic(path, dumps({"files": known + [p for p in paths if p not in known]}))

    def files(self, job_id: str) -> list[str]:
        """The job's recorded files: FILES plus a `files` list in the result (paths, or objects with a `path`)."""
        path = self.dir(job_id)
        found: list[str] = []
        for data in (_read_json(path / FILES), _read_json(path / RESULT)):
            entries = data.get("files") if data is not None else None
            for entry in entries if isinstance(entries, list) else []:  # pyright: ignore[reportUnknownVariableType]
                item = entry.get("path") if isinstance(entry, dict) else entry  # pyright: ignore
                if isinstance(item, str) and item and item not in found:
                    found.append(item)
        return found

    def request_cancel(self, job_id: str) -> None:
        """The cancel every executor watches for. A full or read-only state dir refuses it: logged, not raised (the
        host the job runs in is also asked directly, and the caller reads whether the job ended)."""
        path = self._existing(job_id) / CANCEL
        try:
            write_atomic(path, b"cancel\n")
        except OSError as exc:
            logger.warning("Could not write the cancel request of job %s (%s)", job_id, exc.strerror or exc)

    def cancel_requested(self, job_id: str) -> bool:
        return (self.dir(job_id) / CANCEL).is_file()

    def mark_collected(self, job_id: str) -> None:
        write_atomic(self._existing(job_id) / COLLECTED, b"collected\n")

    def collected(self, job_id: str) -> bool:
        return (self.dir(job_id) / COLLECTED).is_file()

    def mark_dismissed(self, job_id: str) -> None:
        write_atomic(self._existing(job_id) / DISMISSED, b"dismissed\n")

    def dismissed(self, job_id: str) -> bool:
        return (self.dir(job_id) / DISMISSED).is_file()

    def finished_at(self, job_id: str) -> float | None:
        try:
            return (self.dir(job_id) / EXIT_CODE).stat().st_mtime
        except OSError:
            return None

    def delete(self, job_id: str) -> None:
        meta = None
        with contextlib.suppress(JobNotFound):
            meta = self.meta(job_id)
        if meta is not None and meta.idempotency_key:
            binding = _read_json(self.keys / f"{meta.idempotency_key}.json")
            if binding is not None and binding.get("job_id") == job_id:  # only this job's own binding goes
                self.unbind_idempotency(meta.idempotency_key)
        shutil.rmtree(self.dir(job_id), ignore_errors=True)

    def bind_idempotency(self, key: str, job_id: str, request_hash: str) -> str:
        """Bind `key` to `job_id`; an existing binding for the same request wins and its job id is returned.

        Raises:
            JobConflict: the key is bound to a different request.
        """
        try:
            return self._bind(key, job_id, request_hash)
        except OSError as exc:
            raise StoreUnwritable(self.root, exc) from exc

    def bound_job(self, key: str) -> str | None:
        existing = _read_json(self.keys / f"{key}.json")
        job_id = str(existing.get("job_id")) if existing is not None else None
        return job_id if job_id and (self.jobs / job_id / META).is_file() else None

    def _bind(self, key: str, job_id: str, request_hash: str) -> str:
        path = self.keys / f"{key}.json"
        data = dumps({"job_id": job_id, "request_hash": request_hash})
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            existing = _read_json(path)
            if existing is not None and (self.jobs / str(existing.get("job_id")) / META).is_file():
                if existing.get("request_hash") != request_hash:
                    raise JobConflict(
                        "idempotencyKey is already bound to a different request (job "
                        f"{existing.get('job_id')}); use a new key for a new request"
                    ) from None
                return str(existing["job_id"])
            write_atomic(path, data, durable=True)  # a stale binding whose job was swept
            return job_id
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        return job_id

    def unbind_idempotency(self, key: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            (self.keys / f"{key}.json").unlink()
