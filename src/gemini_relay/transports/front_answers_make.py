"""Writes front_answers.json: the SDK's own initialize and tools/list answers for every surface and protocol version.

Each answer is the line the SDK writes on stdio: the real server (RelayServer(deps).build(), as run_server builds
it) served through the SDK's stdio_server over in-memory streams, one fresh session per protocol version. The
settings come from a fixed environment in a temporary home, so the file never depends on the machine it was made
on.

    python -m gemini_relay.transports.front_answers_make           # rewrite the file
    python -m gemini_relay.transports.front_answers_make --check   # exit 1 when it is not what the SDK answers now
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import sys
import tempfile
from collections.abc import AsyncIterator, Mapping
from importlib.metadata import version
from pathlib import Path
from typing import Any

import anyio
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_HANDSHAKE_VERSION

from gemini_relay.app import build_deps
from gemini_relay.backends.backend_registry import entries, names
from gemini_relay.config import Settings
from gemini_relay.core.vocabulary import Toolset
from gemini_relay.server.relay import RelayServer
from gemini_relay.transports.front_answers import ANSWERS_FILE, FORMAT, REGENERATE, surface_key

# What a client sends; the answers depend only on the version (tests/transports/test_front_answers.py checks it).
CLIENT = {"capabilities": {}, "clientInfo": {"name": "front-answers", "version": "1"}}
ANSWER_WAIT = 30.0  # seconds for the SDK's two answers: far above the ~20 ms they take


def surfaces() -> list[tuple[frozenset[Toolset], bool]]:
    """Every (toolsets, test tools) a server can be started with."""
    sets = [frozenset(c) for n in range(len(Toolset) + 1) for c in itertools.combinations(sorted(Toolset), n)]
    return [(toolsets, test) for toolsets in sets for test in (False, True)]


def settings_for(toolsets: frozenset[Toolset], test_tools: bool, home: Path, **extra: str) -> Settings:
    home.mkdir(parents=True, exist_ok=True)
    env = {
        "HOME": str(home),
        "PATH": str(home),
        "GEMINI_RELAY_PROJECT_ROOT": str(home),
        "GEMINI_RELAY_STATE_DIR": str(home / "state"),
        "GEMINI_RELAY_TOOLSETS": ",".join(sorted(toolsets)),
        "GEMINI_MCP_TEST_TOOLS": "1" if test_tools else "",
        **extra,
    }
    return Settings.from_env(env)


class _Lines:
    """stdio_server's stdin: the lines given, then nothing (the session stays open until cancelled)."""

    def __init__(self, lines: list[str]) -> None:
        self._lines = lines

    def __aiter__(self) -> AsyncIterator[str]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[str]:
        for line in self._lines:
            yield line
        await anyio.sleep_forever()


class _Written:
    """stdio_server's stdout: each flushed line, as the wire would carry it."""

    def __init__(self, wanted: int) -> None:
        self.lines: list[str] = []
        self._buffer: list[str] = []
        self._wanted = wanted
        self.done = anyio.Event()

    async def write(self, text: str) -> None:
        self._buffer.append(text)

    async def flush(self) -> None:
        text, self._buffer = "".join(self._buffer), []
        if text:
            self.lines.append(text)
        if len(self.lines) >= self._wanted:
            self.done.set()


async def sdk_lines(server: Server[Any], requests: list[dict[str, Any]]) -> list[str]:
    """The SDK's answer lines to `requests` (notifications get none), in one fresh session."""
    written = _Written(sum("id" in r for r in requests))
    lines = _Lines([json.dumps(r) + "\n" for r in requests])
    async with (
        anyio.create_task_group() as tg,
        stdio_server(lines, written) as (read_stream, write_stream),  # type: ignore[arg-type]
    ):
        tg.start_soon(server.run, read_stream, write_stream, server.create_initialization_options())
        with anyio.fail_after(ANSWER_WAIT):
            await written.done.wait()
        tg.cancel_scope.cancel()  # inside: stdio_server's own reader waits on stdin until cancelled
    return written.lines


def handshake(params: Mapping[str, Any], request_id: Any = 0) -> list[dict[str, Any]]:
    return [
        {"jsonrpc": "2.0", "id": request_id, "method": "initialize", "params": dict(params)},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
    ]


def relay_server(settings: Settings) -> Server[Any]:
    """The server run_server serves with these settings."""
    return RelayServer(build_deps(settings)).build()


async def sdk_answers(server: Server[Any], params: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The SDK's initialize and tools/list results (a fresh session of `server`)."""
    initialize, tools = [json.loads(line) for line in await sdk_lines(server, handshake(params))]
    return initialize["result"], tools["result"]


async def generate() -> dict[str, Any]:
    data: dict[str, Any] = {
        "format": FORMAT,
        "note": f"Generated by `{REGENERATE}`; do not edit (tests/transports/test_front_answers.py checks it).",
        "sdk": {"mcp": version("mcp"), "pydantic": version("pydantic")},
        "versions": list(HANDSHAKE_PROTOCOL_VERSIONS),
        "latest": LATEST_HANDSHAKE_VERSION,
        "spellings": {s: e.name for e in entries() for s in (e.name, *e.aliases)},
        "choice": [
            {"backend": e.name, "binary": list(e.found_by_binary or ()), "keys": list(e.found_by_keys)}
            for e in entries()
            if e.detect is not None
        ],
        "default_choice": next(e.name for e in entries() if e.default_choice),
        "start_checks": sorted({variable for e in entries() for variable in e.start_checks}),
        "answers": {},
        "initialize": {},
        "texts": {},
        "tools/list": {},
        "tools": {},
    }
    with tempfile.TemporaryDirectory(prefix="front-answers-") as tmp:
        for (toolsets, test_tools), backend in itertools.product(surfaces(), names()):
            key = surface_key(toolsets, test_tools=test_tools, backend=backend)
            home = Path(tmp) / key.replace(":", "-")
            server = relay_server(settings_for(toolsets, test_tools, home, GEMINI_MCP_BACKEND=backend))
            for protocol in HANDSHAKE_PROTOCOL_VERSIONS:
                initialize, tools = await sdk_answers(server, {"protocolVersion": protocol, **CLIENT})
                data["answers"].setdefault(key, {})[protocol] = {
                    "initialize": _store_initialize(data, initialize),
                    "tools/list": _store_tools(data, tools),
                }
    return data


def _ref(prefix: str, value: Any) -> str:
    digest = hashlib.sha256(json.dumps(value, sort_keys=True, ensure_ascii=False).encode()).hexdigest()[:12]
    return f"{prefix}@{digest}"


def _store_initialize(data: dict[str, Any], result: dict[str, Any]) -> str:
    stored = dict(result)
    if isinstance(result.get("instructions"), str):
        stored["instructions"] = ref = _ref("instructions", result["instructions"])
        data["texts"][ref] = result["instructions"]
    ref = _ref("initialize", stored)
    data["initialize"][ref] = stored
    return ref


def _store_tools(data: dict[str, Any], result: dict[str, Any]) -> str:
    refs = []
    for entry in result["tools"]:
        ref = _ref(entry["name"], entry)
        data["tools"][ref] = entry
        refs.append(ref)
    stored = {**result, "tools": refs}
    ref = _ref("tools", stored)
    data["tools/list"][ref] = stored
    return ref


def render(data: dict[str, Any]) -> str:
    """One table entry per line, tables sorted by id: a changed tool is a one-line diff."""
    parts = []
    for name, value in data.items():
        head = json.dumps(name)
        if isinstance(value, dict) and name != "sdk":
            rows = [f"  {json.dumps(k)}: {_compact(v)}" for k, v in sorted(value.items())]  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
            parts.append(f"{head}: {{\n" + ",\n".join(rows) + "\n}")
        else:
            parts.append(f"{head}: {_compact(value)}")
    return "{\n" + ",\n".join(parts) + "\n}\n"


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=REGENERATE, description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--check", action="store_true", help="exit 1 when the file is not what the SDK answers now")
    args = parser.parse_args(argv)
    text = render(anyio.run(generate))
    if args.check:
        current = ANSWERS_FILE.read_text(encoding="utf-8") if ANSWERS_FILE.exists() else ""
        if current != text:
            print(f"{ANSWERS_FILE} is not what the SDK answers now; run {REGENERATE}", file=sys.stderr)
            return 1
        return 0
    ANSWERS_FILE.write_text(text, encoding="utf-8")
    print(f"wrote {ANSWERS_FILE} ({len(text.encode())} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
