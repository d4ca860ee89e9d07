"""The agy (Antigravity CLI) backend: everything the relay knows of agy, and `ENTRY`, its line in the registry.

- backend.py: AgyBackend, one `agy --output-format stream-json` process per run; warm.py: WarmAgyBackend, which keeps
  a live process per conversation (stream-json input) once an owner opened it.
- args.py (argv, model ids, --print-timeout), decoder.py (stream-json lines to events), errors.py (exit and stderr
  to RunFailed and notices), settings.py (AGY_*), version.py (the 1.1.15 floor), catalogs.py (`agy models|agents`),
  usage.py (the /usage quota probe), sessions.py (its conversation cache), agy_image.py (gemini-image's file),
  surface.py (gemini-models, -conversations, -doctor and -help).
"""

from __future__ import annotations

from gemini_relay.backends.agy.settings import CHILD_ENV_KEYS, NAME, AgySettings
from gemini_relay.backends.agy.warm import WarmAgyBackend
from gemini_relay.backends.entry import BackendEntry, found_binary

# No fallback model: agy's quota is one bucket per model group (all Gemini models share it) and agy retries an
# exhausted quota itself until --print-timeout, so a second Gemini model would fail the same way after spending the
# rest of the deadline.
ENTRY = BackendEntry(
    name=NAME,
    title="Antigravity CLI",
    build=WarmAgyBackend,
    aliases=("antigravity",),
    detect=found_binary(AgySettings.from_env, "agy"),
    absent="agy was not found",
    found_by_binary=("AGY_CLI_PATH", "agy"),
    start_checks=("AGY_CLI_PATH", "AGY_PRINT_TIMEOUT"),  # validate_config (backend.py)
    enable="install agy (the Antigravity CLI) and sign in once by running `agy` in a terminal",
    preference=10,
    always_diagnosed=True,
    env_prefixes=("AGY_",),
    env_keys=CHILD_ENV_KEYS,
    makes_images=True,
    web_search="agy's own web search",
    guide=(
        "On agy, `sandbox` is forwarded but does not isolate the agent's tools, and the non-Gemini models (Claude, "
        "GPT-OSS) draw on a quota group of their own (gemini-doctor shows the quota)."
    ),
)

__all__ = ["ENTRY", "NAME"]
