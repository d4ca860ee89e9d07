"""Warming the relay host ahead of the first call: the message that asks it to boot a server's warm processes, and the
early, best-effort ask a stdio server sends from a thread of its own as it starts."""

from __future__ import annotations

from typing import Any

from gemini_relay.config import Settings
from gemini_relay.errors import RelayError
from gemini_relay.jobs.host_connection import HostConnection, HostMismatch
from gemini_relay.log import logger


def prewarm_message(settings: Settings) -> dict[str, Any]:
    """Have the host boot the warm processes of a server with these settings (it answers at once)."""
    return {"op": "prewarm", "env": dict(settings.env), "cwd": str(settings.project_root)}


def prewarm_early(settings: Settings) -> None:
    """Start the shared host (if need be) and have it boot this server's warm CLI now. The stdio front calls this
    in a thread of its own as the process starts: the CLI's boot (~1.5 s) then runs beside the SDK's import (~1 s)
    instead of after it, and a first call that comes at once finds the CLI (nearly) ready. Best effort: the server's
    own warm-up asks again, and a first call reports any failure properly."""
    client = HostConnection(settings)
    try:
        client.request(prewarm_message(settings))
    except (OSError, ValueError, HostMismatch, RelayError) as exc:
        logger.info("Early relay host prewarm skipped: %s", exc)
