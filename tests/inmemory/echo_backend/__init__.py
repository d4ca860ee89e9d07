"""The echo backend: a fourth upstream, declared the way agy, the Gemini CLI and the API are (compare
src/gemini_relay/backends/agy/__init__.py): a package that exports `ENTRY`. test_fourth_backend.py adds it with
`register(ENTRY)`, the one registry line a real backend takes, and nothing else of the relay changes."""

from __future__ import annotations

from gemini_relay.backends.entry import BackendEntry
from gemini_relay.config import Settings
from tests.inmemory.echo_backend.backend import NAME, EchoBackend


def _detect(settings: Settings) -> str | None:
    return "ECHO_BACKEND_ON is set" if settings.env.get("ECHO_BACKEND_ON") else None


ENTRY = BackendEntry(
    name=NAME,
    title="Echo",
    build=EchoBackend,
    aliases=("parrot",),
    detect=_detect,
    absent="ECHO_BACKEND_ON is unset",
    preference=1,  # before agy: a test world with ECHO_BACKEND_ON chooses it automatically
    env_prefixes=("ECHO_",),
)

__all__ = ["ENTRY", "NAME"]
