"""What every tool handler receives: the server's shared dependencies and the per-call progress handle."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from gemini_relay.backends.gemini_cli import GeminiCliBackend
from gemini_relay.backends.registry import Selection, select_backend
from gemini_relay.config import Settings
from gemini_relay.content.chunking import ChunkCache
from gemini_relay.errors import InputError
from gemini_relay.jobs.engine import RunEngine
from gemini_relay.jobs.vocabulary import BackendName
from gemini_relay.tools.names import ToolName
from gemini_relay.tools.progress import CallProgress


@dataclass
class Deps:
    settings: Settings
    engine: RunEngine
    gemini: GeminiCliBackend
    chunks: ChunkCache = field(default_factory=ChunkCache)

    async def warm_up(self) -> None:
        """Probe the active backend's `--help` in the background, so the first call does not pay for it."""
        if self.selection().backend is BackendName.GEMINI and self.gemini.locate() is not None:
            await self.gemini.help()

    def selection(self) -> Selection:
        return select_backend(self.settings)

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
