"""Which backend serves a call: GEMINI_MCP_BACKEND when set, else agy when it is found, else gemini."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from gemini_relay.config import Settings
from gemini_relay.core.vocabulary import BackendName


@dataclass(frozen=True)
class Selection:
    backend: BackendName
    notice: str | None = None  # why this backend, when the user did not choose it


class BackendSelector:
    """Resolves the automatic choice once per process, so a session never switches upstream mid-way.

    The first reply of the process carries the notice explaining an automatic choice (`take_notice`).
    """

    def __init__(self, settings: Settings, locate_agy: Callable[[], Path | None]) -> None:
        self._settings = settings
        self._locate_agy = locate_agy
        self._auto: Selection | None = None
        self._notice_taken = False

    def select(self) -> Selection:
        if self._settings.backend is not None:
            return Selection(self._settings.backend)
        if self._auto is None:
            agy = self._locate_agy()
            if agy is not None:
                self._auto = Selection(
                    BackendName.AGY,
                    f"Using the agy backend (Antigravity CLI at {agy}) because GEMINI_MCP_BACKEND is unset and agy "
                    "was found. Set GEMINI_MCP_BACKEND=gemini to use the Gemini CLI instead.",
                )
            else:
                self._auto = Selection(
                    BackendName.GEMINI,
                    "Using the gemini backend (Gemini CLI) because GEMINI_MCP_BACKEND is unset and agy was not found "
                    "on PATH (set AGY_CLI_PATH, or GEMINI_MCP_BACKEND to choose explicitly).",
                )
        return self._auto

    def take_notice(self) -> str | None:
        """The selection notice, once: for the first reply of the process."""
        if self._notice_taken:
            return None
        self._notice_taken = True
        return self.select().notice
