"""Build every backend from the settings; shared by the server and the job supervisor."""

from __future__ import annotations

from gemini_relay.backends.agy import AgyBackend
from gemini_relay.backends.gemini_cli import GeminiCliBackend
from gemini_relay.backends.probe import ProbeCache
from gemini_relay.config import Settings


def build_backends(settings: Settings, probes: ProbeCache | None = None) -> tuple[GeminiCliBackend, AgyBackend]:
    probes = probes or ProbeCache(settings.state_dir / "probes")
    return GeminiCliBackend(settings, probes), AgyBackend(settings, probes)
