"""What every tool handler receives and returns: the server's shared dependencies (Deps) and its reply (Reply)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import anyio
from anyio.abc import TaskGroup

from gemini_relay.backends.backend_registry import BackendRegistry, Selection
from gemini_relay.config import Settings
from gemini_relay.content.chunking import ChunkCache
from gemini_relay.content.worktree import Worktrees
from gemini_relay.content.worktree_reap import reap as reap_worktrees
from gemini_relay.core.receipt import Receipt
from gemini_relay.errors import InputError, RelayError
from gemini_relay.jobs import SWEEP_INTERVAL, Jobs, RunFollower, RunRecord
from gemini_relay.log import logger

MAX_PATH_CHARS = 4096  # PATH_MAX on Linux: a longer path can only be an error


class OwnHost(Protocol):
    """A relay host inside this server (GEMINI_RELAY_HOST=off), as the app built it: it serves within `serving`."""

    def serving(self) -> AbstractAsyncContextManager[None]: ...


@dataclass
class Deps:
    settings: Settings
    runs: RunFollower
    registry: BackendRegistry
    jobs: Jobs | None = None
    chunks: ChunkCache = field(default_factory=ChunkCache)
    background: TaskGroup | None = None  # owned by the transport: gemini-run jobs and adopted jobs run here
    # GEMINI_RELAY_HOST=off: the relay host in this server, built by the app (app.py), served while the server is.
    own_host: OwnHost | None = None
    # Configuration errors of a server that started anyway (app.explained_deps): while there is one, every call but
    # gemini-doctor is refused with them, and nothing is warmed, adopted or run.
    problems: tuple[str, ...] = ()

    @asynccontextmanager
    async def serving(self) -> AsyncIterator[None]:
        """The executor for as long as the server serves: the shared relay host needs nothing here (it is started on
        demand); the server's own host (which the app built) serves in this block."""
        client = getattr(self.jobs, "client", None)
        try:
            async with self.own_host.serving() if self.own_host is not None else nullcontext():
                yield
        finally:
            if client is not None:
                await client.aclose()

    async def maintain(self) -> None:
        """Sweep expired jobs (and the worktrees of isolated runs no kept job ran in) and adopt queued jobs of dead
        servers, at start and then periodically."""
        runner = self.jobs
        if runner is None:
            return
        while True:
            await anyio.to_thread.run_sync(runner.sweep, self.settings.job_ttl_seconds)
            worktrees = Worktrees(self.settings.state_dir, self.settings.env)  # after the sweep: its jobs' went
            await reap_worktrees(worktrees, runner.store, self.settings.job_ttl_seconds)
            for job_id in await anyio.to_thread.run_sync(runner.orphaned):
                self.adopt(job_id)
            await anyio.sleep(SWEEP_INTERVAL)

    def adopt(self, job_id: str) -> None:
        """Run a queued job whose server died before starting it; nobody waits, gemini-status collects it."""
        assert self.jobs is not None and self.background is not None
        record = self.jobs.adopt(job_id)
        if record is None:
            return
        logger.info("Adopting queued job %s of a server that is gone", job_id)
        self.background.start_soon(self.run_detached, record)

    async def run_detached(self, record: RunRecord) -> None:
        try:
            await self.runs.execute(record)
        except RelayError as exc:  # recorded in the job; the caller collects it with gemini-status
            logger.info("Job %s ended: %s", record.run_id, exc)
        except Exception:  # noqa: BLE001 - a follower that breaks must not take the server (every client) down
            logger.exception("Following job %s failed; the job itself is collectable from the store", record.run_id)

    async def warm_up(self) -> None:
        """Probe the active backend in the background, so the first call does not pay for `--help`, and boot the
        warm processes (here when this server owns the pools, else in the relay host) so the first call is warm too."""
        if self.problems:
            return
        self.registry.prewarm()
        prewarm_host = getattr(self.jobs, "prewarm", None)  # the executor owns the warm pools
        # Only when there is a warm CLI to boot: a server of the API or agy backend starts no host ahead of a call.
        if prewarm_host is not None and await anyio.to_thread.run_sync(self.registry.keeps_warm_process):
            try:
                await prewarm_host()
            except (OSError, RelayError) as exc:  # the first real call starts the host and reports properly
                logger.info("Relay host prewarm skipped: %s", exc)
        try:
            await self.registry.warm_up()
        except RelayError as exc:  # the first real call reports it properly
            logger.info("Backend warm-up skipped: %s", exc)

    def selection(self) -> Selection:
        return self.registry.select()

    def resolve_cwd(self, raw: str | None, field: str) -> Path:
        """A per-call working directory, realpath-resolved (relative to the project root); the project root when
        unset. Refused (InputError naming `field`) when it is not a directory, or outside GEMINI_RELAY_ALLOWED_ROOTS
        when that is set."""
        root = self.settings.project_root
        if raw is None:
            return root
        if "\x00" in raw or len(raw) > MAX_PATH_CHARS:
            raise InputError("must be a directory path (no NUL bytes, at most 4096 characters)", field=field)
        try:
            path = (root / Path(raw).expanduser()).resolve(strict=True)
        except (OSError, RuntimeError):
            raise InputError(f"{raw!r} does not exist", field=field) from None
        if not path.is_dir():
            raise InputError(f"{raw!r} is not a directory", field=field)
        allowed = self.settings.allowed_roots
        if allowed and not any(path.is_relative_to(r) for r in allowed):
            raise InputError(f"{path} is outside GEMINI_RELAY_ALLOWED_ROOTS", field=field)
        return path

    def resolve_dirs(self, dirs: list[str] | None, base: Path | None = None) -> tuple[Path, ...]:
        """addDirs as absolute, existing directories (relative entries are taken from the project root)."""
        resolved: list[Path] = []
        for raw in dirs or []:
            path = ((base or self.settings.project_root) / Path(raw).expanduser()).resolve()
            if not path.is_dir():
                raise InputError(f"entry {raw!r} is not a directory", field="addDirs")
            resolved.append(path)
        return tuple(resolved)


@dataclass(frozen=True)
class Link:
    """A file the answer points at: becomes an MCP `resource_link` block (and, with `inline_b64`, the bytes too)."""

    uri: str
    name: str
    mime_type: str | None = None
    size: int | None = None
    inline_b64: str | None = None  # set only when the caller asked for inline media


@dataclass(frozen=True)
class Reply:
    """A tool's successful answer: one text block, plus optional `_meta` and `structuredContent` for clients that
    read data (the server puts the model's view of the reply first in it: model_view.py), and the files the run
    wrote: `files` as plain paths, `links` with their type and size (each becomes a resource_link block)."""

    text: str
    meta: dict[str, Any] | None = None
    structured: dict[str, Any] | None = None
    files: tuple[Path, ...] = ()
    links: tuple[Link, ...] = ()
    # structuredContent's `text` when it is not the text block: the text less a part `structured` holds whole (a
    # finished job's answer is its `result`), so the model does not read it twice (model_view.py).
    model_text: str | None = None
    # The runs the answer came from, the one whose words it is last: the server ends the text with their receipt line
    # and puts them in structuredContent (`receipt`, and `receipts` when there were several).
    receipts: tuple[Receipt, ...] = ()
    receipt_line: bool = True  # False: the text is the answer alone (JSON a program parses); the data has the receipt
