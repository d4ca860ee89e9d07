"""What every tool handler receives: the server's shared dependencies and the per-call progress handle."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from gemini_relay.backends.agy import AgyBackend
from gemini_relay.backends.gemini_cli import GeminiCliBackend
from gemini_relay.backends.registry import BackendSelector, Selection
from gemini_relay.config import Settings
from gemini_relay.content.chunking import ChunkCache
from gemini_relay.errors import InputError, RelayError
from gemini_relay.jobs.engine import RunEngine
from gemini_relay.jobs.vocabulary import BackendName
from gemini_relay.log import logger
from gemini_relay.tools.names import ToolName
from gemini_relay.tools.progress import CallProgress


@dataclass
class Deps:
    settings: Settings
    engine: RunEngine
    gemini: GeminiCliBackend
    agy: AgyBackend
    selector: BackendSelector
    chunks: ChunkCache = field(default_factory=ChunkCache)

    async def warm_up(self) -> None:
        """Probe the active backend in the background, so the first call does not pay for `--help`."""
        try:
            if self.selection().backend is BackendName.AGY:
                await self.agy.version()
                await self.agy.help()
            elif self.gemini.locate() is not None:
                await self.gemini.help()
        except RelayError as exc:  # the first real call reports it properly
            logger.info("Backend warm-up skipped: %s", exc)

    def selection(self) -> Selection:
        return self.selector.select()

    def resolve_dirs(self, dirs: list[str] | None) -> tuple[Path, ...]:
        """addDirs as absolute, existing directories (relative entries are taken from the project root)."""
        resolved: list[Path] = []
        for raw in dirs or []:
            path = (self.settings.project_root / Path(raw).expanduser()).resolve()
            if not path.is_dir():
                raise InputError(f"addDirs entry {raw!r} is not a directory")
            resolved.append(path)
        return tuple(resolved)


@dataclass(frozen=True)
class Reply:
    """A tool's successful answer: one text block, plus optional `_meta` for clients that read data."""

    text: str
    meta: dict[str, Any] | None = None


Handler = Callable[[Deps, Any, CallProgress], Awaitable[Reply]]


@dataclass(frozen=True)
class ToolDef:
    name: ToolName
    description: str
    input_model: type[BaseModel]
    handler: Handler
    read_only: bool
    destructive: bool = False
    idempotent: bool = False
    open_world: bool = True
    prompt_description: str = ""
