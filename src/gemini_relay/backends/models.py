"""Model vocabulary more than one upstream shares: a catalog's rows, and the Gemini model ids and aliases that the
Gemini CLI and the Gemini API both take (agy names its own models: agy/args.py)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ModelInfo:
    id: str
    label: str


@dataclass(frozen=True)
class Catalog:
    """The models an upstream lists: live, or a built-in list with `notice` saying why."""

    models: tuple[ModelInfo, ...]
    live: bool  # False: the built-in fallback, with `notice` saying why
    notice: str | None = None

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(m.id for m in self.models)


# Aliases the relay accepts on the Gemini backends, mapped to Gemini model ids.
GEMINI_ALIASES = {
    "pro": "gemini-3.1-pro-preview",
    "flash": "gemini-3.8-flash",
    "flash-lite": "gemini-3.5-flash-lite",
}
GEMINI_MODELS = (
    "gemini-3.1-pro-preview",
    "gemini-3.8-flash",
    "gemini-3.5-flash-lite",
    "gemini-2.5-pro",
    "gemini-2.5-flash",
)
