"""The walk of one call: how many gemini_relay modules one default `gemini-ask` crosses, server and host side.

The in-memory world of the tests (tests/inmemory: the real server, a scripted backend, the relay host inside the
server with GEMINI_RELAY_HOST=off, so both sides run in this process), one warm-up call, then one `gemini-ask` traced
with sys.setprofile: every gemini_relay module whose functions ran during it is counted once. Prints the count and
the modules in the order the call first entered them (`--list`). A module count, not a time: it says how many rooms
one call walks through, and it drops when a hop that only forwards is merged away.
Run: `.venv/bin/python -m bench.walk [--list]`.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
from pathlib import Path
from types import FrameType
from typing import Any

import anyio

import gemini_relay
from tests.inmemory.conftest import in_memory

PACKAGE = Path(gemini_relay.__file__).resolve().parent


async def walk() -> list[str]:
    """The gemini_relay modules one `gemini-ask` ran functions of, in the order it first entered them."""
    seen: dict[str, None] = {}

    def profile(frame: FrameType, event: str, _arg: Any) -> None:
        if event != "call":
            return
        path = Path(frame.f_code.co_filename)
        if path.is_relative_to(PACKAGE):
            seen.setdefault(str(path.relative_to(PACKAGE)), None)

    with tempfile.TemporaryDirectory() as tmp:
        world = in_memory(Path(tmp))
        async with world.client() as client:
            await client.call_tool("gemini-ask", {"prompt": "warm up"})  # imports and first-call work stay out
            sys.setprofile(profile)
            threading.setprofile(profile)  # the worker threads anyio starts run on the call's path too
            try:
                await client.call_tool("gemini-ask", {"prompt": "say hello"})
            finally:
                sys.setprofile(None)
                threading.setprofile(None)
    return list(seen)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list", action="store_true", help="print the modules in the order the call entered them")
    args = parser.parse_args()
    modules = anyio.run(walk)
    if args.list:
        print("\n".join(modules))
    print(f"modules crossed by one in-memory gemini-ask (server and host side): {len(modules)}")


if __name__ == "__main__":
    main()
