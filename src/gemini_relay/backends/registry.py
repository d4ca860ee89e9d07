"""Which backend serves a call: GEMINI_MCP_BACKEND when set, else the default; the only list of backends."""

from __future__ import annotations

from dataclasses import dataclass

from gemini_relay.config import Settings
from gemini_relay.jobs.vocabulary import BackendName


@dataclass(frozen=True)
class Selection:
    backend: BackendName
    notice: str | None = None


def select_backend(settings: Settings) -> Selection:
    if settings.backend is not None:
        return Selection(settings.backend)
    return Selection(BackendName.GEMINI)
