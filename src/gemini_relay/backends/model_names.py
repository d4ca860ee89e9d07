"""Model vocabulary more than one upstream shares: a catalog's rows, and the Gemini model ids and aliases that the
Gemini CLI and the Gemini API both take (agy names its own models: agy/args.py)."""

from __future__ import annotations

from collections.abc import Sequence
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


def served_notice(upstream: str, requested: str | None, served: Sequence[str]) -> str | None:
    """The notice for a run that another model answered than the one asked for, or None.

    Upstreams fall back silently (agy runs Flash when a --model slug does not resolve; the Gemini CLI falls back on
    quota): the model the run reports is the only witness. One id that extends the other (a tier, a dated version of
    an alias) is the same model; so is any served model that matches, since a CLI also calls helper models.
    """
    if not requested or not served:
        return None
    want = _bare(requested)
    if any(have.startswith(want) or want.startswith(have) for have in map(_bare, served)):
        return None
    ran = ", ".join(dict.fromkeys(served))
    return (
        f"{upstream} ran {ran}, not the requested {requested}: it fell back to another model (see gemini-models for "
        "the ids it accepts, and gemini-doctor for its quota)."
    )


def served_model(asked: str | None, served: Sequence[str]) -> str | None:
    """The model that answered: of those the upstream says served the run, the one asked for when it is among them
    (a CLI calls helper models too), else the first; `asked` when the upstream names none."""
    if not served:
        return asked
    want = _bare(asked) if asked else None
    for have in served:
        if want is not None and (_bare(have).startswith(want) or want.startswith(_bare(have))):
            return have
    return served[0]


def _bare(model: str) -> str:
    return model.strip().casefold().removeprefix("models/")
