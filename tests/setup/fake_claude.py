"""A stand-in `claude` for setup's tests: `claude mcp add-json -s user <name> -` and `claude mcp remove -s user
<name>` edit `~/.claude.json` as the real CLI does (2.1.332), and, as the real CLI's first run in a home does, leave
files in a new `~/.claude` (a `backups/` copy and a `settings.json`). With FAKE_CLAUDE_GATE set to a Unix socket,
`add-json` connects to it and waits for a byte before writing: a test holds a setup mid-write that way."""

from __future__ import annotations

import os
import sys
from pathlib import Path

SCRIPT = """#!{python}
import json, os, socket, sys
from pathlib import Path

home = Path(os.environ["HOME"])
args = sys.argv[1:]
config = home / ".claude.json"
data = json.loads(config.read_text()) if config.exists() else {{}}
if args[:2] == ["mcp", "add-json"]:
    entry = json.loads(sys.stdin.read())
    gate = os.environ.get("FAKE_CLAUDE_GATE")
    if gate:
        with socket.socket(socket.AF_UNIX) as held:
            held.settimeout(60)
            held.connect(gate)
            held.recv(1)
    data.setdefault("mcpServers", {{}})[args[4]] = entry
elif args[:2] == ["mcp", "remove"]:
    data.get("mcpServers", {{}}).pop(args[4], None)
else:
    sys.exit(2)
folder = home / ".claude"
(folder / "backups").mkdir(parents=True, exist_ok=True)
if not (folder / "settings.json").exists():
    (folder / "settings.json").write_text("{{}}\\n")
if config.exists():
    (folder / "backups" / ".claude.json.backup").write_bytes(config.read_bytes())
config.write_text(json.dumps(data, indent=2) + "\\n")
"""


def install_fake_claude(bin_dir: Path) -> Path:
    fake = bin_dir / "claude"
    fake.write_text(SCRIPT.format(python=sys.executable), encoding="utf-8")
    fake.chmod(0o755)
    return fake


def on_path() -> Path:
    """The home fixture's bin folder (its PATH)."""
    return Path(os.environ["PATH"])
