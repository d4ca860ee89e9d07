"""A backend's one declaration: the entry its package exports as `ENTRY` and the registry lists (backend_registry.py).

Everything the relay knows of a backend outside its package is here: its name and the other spellings
GEMINI_MCP_BACKEND accepts, how it is built from the settings, how the automatic choice finds it, its fallback model,
whether gemini-doctor shows it beside the active one, which environment variables it reads beyond the shared
child allowlist (so a relay host builds it from the same settings as the server that asked), and what the server's
instructions and tool descriptions may claim of it while it is the active one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from gemini_relay.backends.base import Backend
from gemini_relay.backends.probe import ProbeCache
from gemini_relay.config import Settings
from gemini_relay.core.vocabulary import BackendName


class BuiltBackend(Backend, Protocol):
    def validate_config(self) -> None:
        """Raises ConfigError for its settings that must fail fast at start (an explicit binary that is not there)."""
        ...


class Locating(Protocol):
    def locate(self, env: Mapping[str, str]) -> Path | None: ...


def found_binary(read: Callable[[Mapping[str, str]], Locating], label: str) -> Callable[[Settings], str | None]:
    """The `detect` of a backend found by its executable: "<label> was found at <path>", or None."""

    def detect(settings: Settings) -> str | None:
        found = read(settings.env).locate(settings.env)
        return f"{label} was found at {found}" if found is not None else None

    return detect


@dataclass(frozen=True)
class BackendEntry:
    name: BackendName  # the registry key, what GEMINI_MCP_BACKEND names
    title: str  # what it is, in messages: "Antigravity CLI"
    build: Callable[[Settings, ProbeCache], BuiltBackend]  # parses its own settings section from `Settings.env`
    aliases: tuple[str, ...] = ()  # other spellings of GEMINI_MCP_BACKEND that choose it
    # The automatic choice (GEMINI_MCP_BACKEND unset): the lowest `preference` whose `detect` says why it fits now
    # ("agy was found at /usr/bin/agy"); `absent` says why it did not, in the notice of a later choice. With none
    # detected, the `default_choice` entry runs (its calls say what to install). No `detect`: never chosen so.
    detect: Callable[[Settings], str | None] | None = None
    absent: str = ""
    # What `detect` looks at, as data, for the stdio front, which must name the automatic choice before it can afford
    # to import a backend: a binary (its variable, its default name on PATH) or keys. test_front_answers.py holds
    # `detect` and this to the same answer.
    found_by_binary: tuple[str, str] | None = None
    found_by_keys: tuple[str, ...] = ()
    # The variables its `validate_config` refuses at start when wrong (a configuration problem the first `initialize`
    # answer must say): the stdio front leaves a start that sets one to the SDK, unless it is `found_by_binary`'s
    # variable naming an executable.
    start_checks: tuple[str, ...] = ()
    enable: str = ""  # what makes it usable, for a notice naming the alternatives: "set GEMINI_API_KEY (…)"
    preference: int = 100
    default_choice: bool = False
    fallback_model: str | None = None  # a capacity failure's retry model when GEMINI_FALLBACK_MODEL is unset
    always_diagnosed: bool = False  # gemini-doctor shows it even when another backend is active
    env_prefixes: tuple[str, ...] = ()  # the variables its settings section and its child read, beyond the allowlist
    env_keys: tuple[str, ...] = ()
    # What the server's instructions and tool descriptions say of it while it is active (they name no other):
    agent: bool = True  # an agent reads the project, runs tools and may edit files; False: a model answers in text
    makes_images: bool = False  # the agent makes image files itself (else gemini-image asks the Gemini API)
    web_search: str = "its web search tool"  # how gemini-search's answer searches the web
    guide: str = ""  # a paragraph the instructions add: what a calling agent must know of this backend

    @property
    def label(self) -> str:
        """`agy backend (Antigravity CLI)`, as messages name it."""
        return f"{self.name} backend ({self.title})"
