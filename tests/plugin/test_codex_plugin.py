"""The Codex CLI (0.169.0) reads the same marketplace: `codex plugin marketplace add <this checkout>` and `codex plugin
add gemini-relay@gemini-relay` install the plugin, and Codex lists its relay server with the toolsets it enables.

Measured here and not asserted: Codex 0.169.0 substitutes neither `${CLAUDE_PLUGIN_ROOT}` nor `${PLUGIN_ROOT}` in a
plugin's `.mcp.json` command or args (nor sets them in the server's env), so in `codex exec` the launcher is not found
and the relay's tools do not reach its model; the same entry with an absolute command lists them. Claude Code in turn
does not put a plugin's bin/ on the server's PATH, so no one command form serves both hosts yet."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from tests.harness import REPO
from tests.real_codex import Codex


def test_codex_installs_the_plugin_from_this_marketplace_and_lists_its_relay_server(tmp_path: Path) -> None:
    codex = Codex(tmp_path, {"PATH": os.environ["PATH"]})
    added = codex.run(["plugin", "marketplace", "add", str(REPO)], tmp_path)
    assert added.returncode == 0 and "Added marketplace `gemini-relay`" in added.stdout, added
    installed = codex.run(["plugin", "add", "gemini-relay@gemini-relay"], tmp_path)
    assert installed.returncode == 0 and "Added plugin `gemini-relay`" in installed.stdout, installed
    listed = codex.run(["plugin", "list"], tmp_path)
    assert "gemini-relay@gemini-relay  installed, enabled  0.1.0" in listed.stdout, listed.stdout
    (server,) = codex.servers(tmp_path)
    transport: dict[str, Any] = server["transport"]
    assert server["name"] == "gemini-relay" and server["enabled"], json.dumps(server)
    assert transport["command"].endswith("/bin/gemini-relay-launch")
    assert transport["env"] == {"GEMINI_RELAY_TOOLSETS": "jobs,review"}
