"""setup-files: `gemini-relay setup --yes`, then `setup --remove --yes`, in a temporary home where a client's config
path holds something odd: a folder, a FIFO, JSON with a lone surrogate, NaN or 1e400, a file mode 0444, a dangling
link, Codex TOML with comments. Every byte the user had comes back after the remove (file, mode, link target); no
run hangs or ends in a traceback.
"""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import tempfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import anyio

from bench.reliability.table import Figure, at_least, zero

CATEGORY = "setup-files"
BOUND = 60.0  # one setup run (a Python start and a few small files) on a loaded 2-core machine
CONFIGS = {
    "cursor": ".cursor/mcp.json",
    "vscode": ".config/Code/User/mcp.json",
    "claude-desktop": ".config/Claude/claude_desktop_config.json",
    "claude-code": ".claude.json",
}
CODEX_TOML = (
    '# my settings\nmodel = "gpt-5.4"  # mine\n\n[mcp_servers.other]  # a server of my own\ncommand = "other"\n'
    '# trailing words\n\n[profiles.fast]\nmodel = "o4"\n'
)


def _text(body: str) -> Callable[[Path], None]:
    def make(path: Path) -> None:
        path.write_text(body, encoding="utf-8")

    return make


def _read_only(path: Path) -> None:
    path.write_text('{"mcpServers": {}, "mine": true}\n', encoding="utf-8")
    path.chmod(0o444)


def _dangling(path: Path) -> None:
    path.symlink_to(path.parent / "dotfiles-not-made" / "mcp.json")


ODD: dict[str, Callable[[Path], None]] = {
    "a folder": lambda p: p.mkdir(),
    "a FIFO": lambda p: os.mkfifo(p),
    "JSON with a lone surrogate": _text('{"name": "\\ud800", "mcpServers": {}}\n'),
    "JSON with NaN": _text('{"x": NaN, "mcpServers": {}}\n'),
    "JSON with 1e400": _text('{\n  "limit": 1e400,\n  "mcpServers": {}\n}\n'),
    "a file mode 0444": _read_only,
    "a dangling link": _dangling,
}


def snapshot(root: Path) -> dict[str, tuple[str, bytes, int]]:
    """Kind, bytes (a link: its target; a FIFO or folder: none) and mode of everything under `root`."""
    found: dict[str, tuple[str, bytes, int]] = {}
    for path in sorted(root.rglob("*")):
        info = path.lstat()
        mode = stat.S_IMODE(info.st_mode)
        if stat.S_ISLNK(info.st_mode):
            found[str(path.relative_to(root))] = ("link", str(path.readlink()).encode(), 0)
        elif stat.S_ISREG(info.st_mode):
            found[str(path.relative_to(root))] = ("file", path.read_bytes(), mode)
        else:
            found[str(path.relative_to(root))] = ("fifo" if stat.S_ISFIFO(info.st_mode) else "dir", b"", mode)
    return found


def run_setup(base: Path, *args: str) -> tuple[str, str]:
    """(problem, output): problem is "" when setup ended in time without a traceback."""
    env = {"HOME": str(base / "home"), "PATH": str(base / "bin"), "LANG": "C.UTF-8",
           "GEMINI_RELAY_STATE_DIR": str(base / "state")}  # fmt: skip
    process = subprocess.Popen([sys.executable, "-m", "gemini_relay", "setup", *args], cwd=base / "project",
                               env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True, start_new_session=True)  # fmt: skip
    try:
        out, _ = process.communicate(timeout=BOUND)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        out, _ = process.communicate()
        return "hang", out
    return ("traceback" if "Traceback" in out else ""), out


def trial(client: str, relative: str, make: Callable[[Path], None]) -> tuple[list[str], list[str], list[str]]:
    """(bytes lost, hangs, tracebacks) of setup then remove with `make` at the client's config path."""
    lost: list[str] = []
    hung: list[str] = []
    traced: list[str] = []
    with tempfile.TemporaryDirectory(prefix="relay-setup-files-") as tmp:
        base = Path(tmp)
        for name in ("home", "project", "bin", "state"):
            (base / name).mkdir()
        config = base / "home" / relative
        config.parent.mkdir(parents=True, exist_ok=True)
        make(config)
        before = snapshot(base / "home")
        for step in (("--client", client, "--yes"), ("--client", client, "--remove", "--yes")):
            problem, out = run_setup(base, *step)
            label = f"{client}, {' '.join(step[2:])}"
            if problem == "hang":
                hung.append(f"{label}: no end within {BOUND:g}s")
            elif problem:
                traced.append(f"{label}: {out.strip().splitlines()[-1][:160]}")
        after = snapshot(base / "home")
        lost += [f"{client}: {rel} was {before[rel][0]} ({len(before[rel][1])} bytes, mode {before[rel][2]:o}), now "
                 + (f"{after[rel][0]} ({len(after[rel][1])} bytes, mode {after[rel][2]:o})" if rel in after else "gone")
                 for rel in before if after.get(rel) != before[rel]]  # fmt: skip
    return lost, hung, traced


def trials(short: bool) -> tuple[int, list[str], list[str], list[str]]:
    clients = {"cursor": CONFIGS["cursor"]} if short else CONFIGS
    count, lost, hung, traced = 0, [], [], []
    cases = [(c, rel, name, make) for c, rel in clients.items() for name, make in ODD.items()]
    cases.append(("codex", ".codex/config.toml", "Codex TOML with comments", _text(CODEX_TOML)))
    with ThreadPoolExecutor(3) as pool:  # each trial waits on its own setup processes
        results = list(pool.map(lambda case: (case[2], trial(case[0], case[1], case[3])), cases))
    for name, got in results:
        count += 1
        lost += [f"{name}: {x}" for x in got[0]]
        hung += [f"{name}: {x}" for x in got[1]]
        traced += [f"{name}: {x}" for x in got[2]]
    return count, lost, hung, traced


async def attack(short: bool) -> list[Figure]:
    count, lost, hung, traced = await anyio.to_thread.run_sync(trials, short)
    return [
        at_least(
            CATEGORY,
            "odd config files setup --yes then --remove --yes ran on",
            count,
            len(ODD) * (1 if short else len(CONFIGS)) + 1,
        ),
        zero(CATEGORY, "user files not byte-identical after --remove (bytes, mode, link target)", lost),
        zero(CATEGORY, "setup runs that hung", hung),
        zero(CATEGORY, "setup runs that ended in a traceback", traced),
    ]
