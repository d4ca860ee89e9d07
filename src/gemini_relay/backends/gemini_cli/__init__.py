"""The Gemini CLI backend: everything the relay knows of the Gemini CLI, and `ENTRY`, its line in the registry.

- warm.py: GeminiBackend, each run warm on a `gemini --acp` process (acp/: the pool, the JSON-RPC connection, its
  sessions, permissions and updates) when an owner opened the pool, else cold; backend.py: GeminiCliBackend, one
  `gemini --output-format stream-json` process per run.
- args.py (argv and model ids), decoder.py (stream-json lines to events), errors.py (exit and stderr to RunFailed),
  settings.py (GEMINI_CLI_PATH, GEMINI_DEFAULT_MODEL, the warm limits; where the CLI keeps its state), sessions.py
  (its saved chats), usage.py (a call's tokens from its recording), auth.py (how it would sign in), surface.py
  (gemini-models, -conversations, -doctor and -help).
"""

from __future__ import annotations

from gemini_relay.backends.entry import BackendEntry, found_binary
from gemini_relay.backends.gemini_cli.settings import NAME, GeminiCliSettings
from gemini_relay.backends.gemini_cli.warm import GeminiBackend

ENTRY = BackendEntry(
    name=NAME,
    title="Gemini CLI",
    build=GeminiBackend,
    aliases=("gemini-cli",),
    detect=found_binary(GeminiCliSettings.from_env, "the Gemini CLI"),
    found_by_binary=("GEMINI_CLI_PATH", "gemini"),
    absent="the Gemini CLI was not found",
    enable="install the Gemini CLI (`npm install -g @google/gemini-cli`, Node 20+) and give it GEMINI_API_KEY",
    preference=20,
    default_choice=True,
    fallback_model="gemini-2.5-flash",
    always_diagnosed=True,
    web_search="the Gemini CLI's google_web_search tool",
)

__all__ = ["ENTRY", "NAME"]
