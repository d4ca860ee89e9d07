"""Run every category (or those named), print the table, exit 1 when a figure is off its goal."""

from __future__ import annotations

import argparse
import importlib
import sys
import time
import traceback
from collections.abc import Awaitable, Callable
from typing import cast

import anyio

from bench.reliability.table import Figure, findings_text, informative, render

Attack = Callable[[bool], Awaitable[list[Figure]]]


def _lazy(module: str, function: str) -> Attack:
    """The attack `function` of bench.reliability.`module`, imported when it runs: the suite runs one category per
    process, and importing every category (hypothesis, jsonschema, ...) cost each run about 0.45 s of CPU."""

    async def attack(short: bool) -> list[Figure]:
        loaded = importlib.import_module(f"bench.reliability.{module}")
        return cast("list[Figure]", await getattr(loaded, function)(short))

    return attack


async def _server_kills(short: bool) -> list[Figure]:
    from bench.reliability import crashes

    return await crashes.server_kills(crashes.runs_for(short), crashes.server_points(short))


async def _child_kills(short: bool) -> list[Figure]:
    from bench.reliability import crashes

    return await crashes.child_kills(crashes.runs_for(short), *crashes.child_points(short))


async def _bad_input(short: bool) -> list[Figure]:
    from bench.reliability import bad_input

    return await bad_input.attack(*bad_input.plan(short))


CATEGORIES: dict[str, Attack] = {
    "crashes": _server_kills,
    "crashes-children": _child_kills,
    "bad-input": _bad_input,
    "protocol": _lazy("protocol", "attack"),  # its own world and server: the suite's workers run it beside bad-input
    "escapes": _lazy("escapes", "attack"),
    "files": _lazy("state_files", "attack"),
    "files-state": _lazy("state_files", "attack_state"),
    "files-midrun": _lazy("mid_run", "attack"),
    "secrets": _lazy("secrets", "attack"),
    "load": _lazy("load", "attack"),
    "faults": _lazy("faults", "attack"),
    "http": _lazy("http_door", "attack"),
    "http-floods": _lazy("http_floods", "attack"),
    "host-door": _lazy("host_door", "attack"),
    "host-loss": _lazy("host_loss", "attack"),
    "asking": _lazy("asking", "attack"),
    "cut-stream": _lazy("cut_stream", "attack"),
    "setup-files": _lazy("setup_files", "attack"),
}


async def run(short: bool, names: list[str]) -> list[Figure]:
    figures: list[Figure] = []
    for name in names:
        started = time.monotonic()
        try:
            got = await CATEGORIES[name](short)
        except Exception as exc:  # noqa: BLE001 - an attack that breaks is a failed figure, not a crash of the suite
            where = "".join(traceback.format_exception(exc)[-3:]).strip()  # the last frames: enough to find it again
            got = [Figure(name, "attack ran to the end", repr(exc)[:80], "yes", False, [repr(exc), where])]
        figures += got
        bad = sum(not f.ok for f in got)
        print(f"{name}: {len(got)} figures, {bad} off goal ({time.monotonic() - started:.0f}s)", file=sys.stderr)
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.reliability", description=__doc__)
    parser.add_argument("--short", action="store_true", help="small counts (CI): every category in a few minutes")
    parser.add_argument("--only", default="", help=f"comma-separated categories, from {','.join(CATEGORIES)}")
    parser.add_argument(
        "--timings-informative",
        action="store_true",
        help="wall-clock goals are shown but fail nothing: the test suite runs this on machines of any load",
    )
    args = parser.parse_args(argv)
    names = [n for n in args.only.split(",") if n] or list(CATEGORIES)
    unknown = set(names) - set(CATEGORIES)
    if unknown:
        parser.error(f"unknown categories {sorted(unknown)}")
    started = time.monotonic()
    figures = anyio.run(run, args.short, names)
    if args.timings_informative:
        figures = [informative(f) for f in figures]
    print(render(figures))
    details = findings_text(figures)
    if details:
        print(details)
    mode = "short" if args.short else "full"
    print(f"({mode} mode, {time.monotonic() - started:.0f}s)")
    return 0 if all(f.ok for f in figures) else 1


if __name__ == "__main__":
    sys.exit(main())
