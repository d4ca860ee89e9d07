"""The api backend's light vocabulary: names, model ids and doctor results. No google-genai import here.

The SDK takes ~0.3 s to import; the server imports this package whatever backend it runs, so only a run, a models
listing or a doctor check loads the SDK (backend.py imports those modules lazily).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gemini_relay.backends.model_names import GEMINI_ALIASES
from gemini_relay.errors import InputError

COMMAND = "gemini-api"  # the word in messages about this upstream: `gemini-api timed out after 30s`
DEFAULT_MODEL = GEMINI_ALIASES["pro"]  # when neither the call nor GEMINI_DEFAULT_MODEL names one
# The id becomes a URL path segment (`models/{id}:streamGenerateContent`): no '/', '?', '%' or '..' tricks.
MODEL_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
SEARCH_TOOLS = frozenset({"gemini-search"})  # tools whose runs get the Google Search grounding tool


def resolve_model(requested: str | None, default: str | None) -> str:
    """An alias or id -> the API model id; InputError for anything that is not a model id (checked before a job)."""
    raw = (requested or default or "").strip()
    if "\t" in raw:  # a pasted "<id>\t<label>" row from a models listing
        raw = raw.split("\t", 1)[0].strip()
    raw = raw.removeprefix("models/")
    if not raw or raw.lower() == "auto":
        fallback = (default or "").strip().removeprefix("models/")
        raw = fallback if fallback and fallback.lower() != "auto" else DEFAULT_MODEL
    model = GEMINI_ALIASES.get(raw.lower(), raw)
    if not MODEL_ID.fullmatch(model) or ".." in model:
        raise InputError(f"model {model!r} is not a model id; see gemini-models for the ids this backend accepts")
    return model


@dataclass(frozen=True)
class Check:
    """One gemini-doctor line."""

    name: str
    ok: bool
    detail: str

    def line(self) -> str:
        return f"{'✅' if self.ok else '❌'} {self.name}: {self.detail}"


@dataclass(frozen=True)
class Diagnosis:
    checks: tuple[Check, ...]

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.checks)

    def lines(self) -> list[str]:
        return [c.line() for c in self.checks]
