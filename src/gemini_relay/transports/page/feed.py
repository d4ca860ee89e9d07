"""What the page shows: every job in the shared state dir (any server's), read from the store like gemini-jobs does.

A snapshot is plain JSON: summaries, the streamed tail of running jobs and the media files each job recorded. It is
stable while nothing changes (running jobs carry their start time, not a growing elapsed), so the event stream only
sends it when it differs. Terminal statuses never change and are cached; everything else is re-read each time.
"""

from __future__ import annotations

import contextlib
import mimetypes
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gemini_relay.format import receipt_line
from gemini_relay.jobs.store.file_store import FILES, OUT, FileJobStore
from gemini_relay.jobs.store.job_status import JobStatus, derive_status
from gemini_relay.jobs.store.job_store import JobNotFound

MAX_JOBS = 60  # the newest ones; a page of cards, not an archive
TAIL_BYTES = 2048  # of a running job's streamed text: enough to watch it move
PREVIEW_CHARS = 280
MEDIA_KINDS = ("image", "audio", "video")
# Same-origin SVG can carry script; only raster images, audio and video are served.
REFUSED_TYPES = frozenset({"image/svg+xml"})


@dataclass(frozen=True)
class MediaFile:
    index: int  # its place among the job's recorded files: the URL's number, stable if another one disappears
    path: Path  # realpath, inside an allowed root
    content_type: str

    @property
    def kind(self) -> str:
        return self.content_type.split("/", 1)[0]


def media_type(path: Path) -> str | None:
    """The content type of a file the page may serve, or None (not image/audio/video, or SVG)."""
    guessed, _ = mimetypes.guess_type(path.name)
    if guessed is None or guessed in REFUSED_TYPES or guessed.split("/", 1)[0] not in MEDIA_KINDS:
        return None
    return guessed


def inside(path: Path, roots: tuple[Path, ...]) -> bool:
    return any(path == root or root in path.parents for root in roots)


class JobFeed:
    """Reads jobs for the page. `roots` (realpaths) bound which recorded files may be served."""

    def __init__(self, store: FileJobStore, roots: tuple[Path, ...]) -> None:
        self.store = store
        self.roots = tuple(Path(os.path.realpath(r)) for r in roots)
        self._terminal: dict[str, JobStatus] = {}
        self._media: dict[str, tuple[int | None, list[MediaFile]]] = {}

    def status(self, job_id: str, now: float | None = None) -> JobStatus:
        """Raises JobNotFound."""
        cached = self._terminal.get(job_id)
        if cached is not None:
            return cached
        status = derive_status(self.store, job_id, now=now)
        if status.state.terminal:
            self._terminal[job_id] = status
        return status

    def media(self, job_id: str) -> list[MediaFile]:
        """The job's recorded files that exist, lie inside the roots (through symlinks) and are media."""
        found: list[MediaFile] = []
        for index, raw in enumerate(self.store.files(job_id)):
            if "\0" in raw or not Path(raw).is_absolute():
                continue
            real = Path(os.path.realpath(raw))
            kind = media_type(real)
            if kind is not None and inside(real, self.roots) and real.is_file():
                found.append(MediaFile(index, real, kind))
        return found

    def snapshot(self) -> dict[str, Any]:
        rows: list[JobStatus] = []
        ids = self.store.job_ids()
        now = time.time()
        for job_id in ids:
            with contextlib.suppress(JobNotFound, OSError, ValueError, KeyError):
                rows.append(self.status(job_id, now))
        for gone in set(self._terminal) - set(ids):  # swept after their TTL
            del self._terminal[gone]
            self._media.pop(gone, None)
        rows.sort(key=lambda s: s.created_at, reverse=True)
        jobs = [self._summary(row, now) for row in rows[:MAX_JOBS]]
        return {"jobs": jobs, "total": len(rows)}

    def detail(self, job_id: str) -> dict[str, Any]:
        """One job in full: its status JSON, the whole text so far, its media. Raises JobNotFound."""
        status = self.status(job_id)
        text = status.text if status.state.terminal else self.store.text(job_id)
        return {**status.to_json(), "text": text or "", "files": self._files(job_id, status.state.terminal)}

    def _summary(self, status: JobStatus, now: float) -> dict[str, Any]:
        row: dict[str, Any] = {
            "id": status.job_id,
            "tool": status.tool,
            "backend": status.backend,
            "state": status.state.value,
            "terminal": status.state.terminal,
            "created_at": round(status.created_at, 1),
            "model": status.model,
            "conversation_id": status.conversation_id,
            "error": status.failure.message if status.failure else None,
            "failure_reason": status.failure_reason.value if status.failure_reason else None,
            "partial": status.outcome.partial if status.outcome else False,
            # The run the answer came from (format.receipt_line): which model, warm or cold, how long, tokens.
            "receipt": receipt_line([receipt]) if status.outcome and (receipt := status.outcome.receipt) else None,
            "files": self._files(status.job_id, status.state.terminal),
        }
        if status.state.terminal:
            row["elapsed"] = round(status.elapsed, 1)
            row["preview"] = status.text[:PREVIEW_CHARS]
            row["chars"] = len(status.text)
        else:
            # The start time, not the elapsed: the page counts up itself and the snapshot stays unchanged.
            row["since"] = round(now - status.elapsed, 1)
            row["tail"] = self._tail(status.job_id)
        return row

    def _files(self, job_id: str, terminal: bool = True) -> list[dict[str, str]]:
        return [
            {"url": f"/files/{job_id}/{m.index}", "name": m.path.name, "kind": m.kind, "type": m.content_type}
            for m in self._media_of(job_id, terminal)
        ]

    def _media_of(self, job_id: str, terminal: bool) -> list[MediaFile]:
        """media(), cached for a finished job until its files record changes (its result never does)."""
        try:
            stamp = (self.store.dir(job_id) / FILES).stat().st_mtime_ns
        except (OSError, JobNotFound):
            stamp = None
        cached = self._media.get(job_id)
        if terminal and cached is not None and cached[0] == stamp:
            return cached[1]
        try:
            files = self.media(job_id)
        except (JobNotFound, OSError):
            return []
        if terminal:
            self._media[job_id] = (stamp, files)
        return files

    def _tail(self, job_id: str) -> str:
        try:
            with (self.store.dir(job_id) / OUT).open("rb") as handle:
                size = handle.seek(0, os.SEEK_END)
                handle.seek(max(0, size - TAIL_BYTES))
                data = handle.read()
        except (OSError, JobNotFound):
            return ""
        text = data.decode("utf-8", errors="ignore")  # a cut multibyte character at the start is dropped
        return text if size <= TAIL_BYTES else "…" + text
