"""One isolated world per attack: a temp home, project root and state dir, the API emulator, the pinned Gemini CLI.

Every process a world starts names its temp dir in its environment, so what is left running afterwards is found in
/proc (bench.kill9.processes_of) and killed, and counted as left.
"""

from __future__ import annotations

import contextlib
import os
import signal
import tempfile
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp import Client

from bench.kill9 import World, make_world, processes_of
from tests.fakes.fake_gemini_api import FakeGeminiApi
from tests.harness import Relay, stop_host, stop_hosts_of

CALL_BOUND = 120.0  # any one call answering: a run with a cold CLI on a loaded 2-core machine takes a few seconds
LEFT_BOUND = 20.0  # processes of a world ending after its last server closed
INVALID_PREFIX = "Invalid arguments for "


@dataclass
class Answer:
    text: str
    is_error: bool
    meta: dict[str, Any]
    structured: dict[str, Any] | None = None  # the data of a job tool's answer (its text is Markdown for a person)


def text_of(result: types.CallToolResult) -> str:
    return "".join(block.text for block in result.content if isinstance(block, types.TextContent))


async def call(client: Client, tool: str, args: dict[str, Any], bound: float = CALL_BOUND, **kw: Any) -> Answer:
    """One call answered within `bound` (TimeoutError otherwise: a hang)."""
    with anyio.fail_after(bound):
        result = await client.call_tool(tool, args, **kw)
    return Answer(text_of(result), bool(result.is_error), dict(result.meta or {}), result.structured_content)


def refused_properly(tool: str, answer: Answer) -> bool:
    return answer.is_error and answer.text.startswith(f"Error executing {tool}: {INVALID_PREFIX}{tool}: ")


def job_count(state: Path) -> int:
    jobs = state / "jobs"
    return sum(1 for p in jobs.iterdir() if p.is_dir()) if jobs.is_dir() else 0


@contextmanager
def world(prefix: str, **env: str) -> Iterator[World]:
    """A kill9 World (relay + job store) with every toolset on, plus `env`; anything left running is killed."""
    with tempfile.TemporaryDirectory(prefix=f"relay-{prefix}-") as tmp, FakeGeminiApi() as api:
        made = make_world(Path(tmp), api)
        made.relay.env.update({"GEMINI_RELAY_TOOLSETS": "all", **env})
        try:
            yield made
        finally:
            for pid in processes_of(made.relay.base):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)


def state_dir(w: World) -> Path:
    return Path(w.relay.env["GEMINI_RELAY_STATE_DIR"])


async def left_running(w: World, bound: float = LEFT_BOUND) -> list[str]:
    """Processes of this world still alive `bound` seconds after its servers closed, by command line. The relay
    host outlives its servers by design (GEMINI_RELAY_HOST_IDLE): it is asked to stop first, and what it leaves
    behind counts."""
    stop_host(state_dir(w))
    stop_hosts_of(w.relay.home)
    with anyio.move_on_after(bound):
        while processes_of(w.relay.base):
            await anyio.sleep(0.05)
    found = []
    for pid in processes_of(w.relay.base):
        with contextlib.suppress(OSError):
            found.append(f"pid {pid}: " + Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")[:120].decode())
    return found


def all_logs(w: World) -> str:
    """Every log the relay wrote: the servers' stderr plus every job's files under the state dir except the answer."""
    parts = [w.relay.stderr()]
    host_log = state_dir(w) / "host" / "host.log"  # hosted runs log there
    if host_log.exists():
        parts.append(host_log.read_text(encoding="utf-8", errors="replace"))
    jobs = state_dir(w) / "jobs"
    if jobs.is_dir():
        parts += [p.read_text(encoding="utf-8", errors="replace") for p in sorted(jobs.glob("*/*.log"))]
    return "\n".join(parts)


@asynccontextmanager
async def client(w: World, **env: str | None) -> AsyncIterator[Client]:
    async with w.relay.client(**env) as opened:
        yield opened


def relay_of(w: World) -> Relay:
    return w.relay
