"""The `gemini-relay` command: with no subcommand (or `serve`) it serves MCP over stdio."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import anyio

from gemini_relay import __version__
from gemini_relay.commands import DEFAULT_HOOK_TIMEOUT, doctor_state, hook_wait, wait_job
from gemini_relay.config import Settings
from gemini_relay.errors import ConfigError
from gemini_relay.log import configure, logger

if TYPE_CHECKING:
    from gemini_relay.tools.context import Deps


def _seconds(raw: str) -> float:
    units = {"s": 1.0, "m": 60.0, "h": 3600.0}
    unit = units.get(raw[-1:].lower())
    try:
        value = float(raw[:-1] if unit else raw) * (unit or 1.0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{raw!r} is not a duration (e.g. 90, 90s, 10m, 1h)") from None
    if value <= 0:
        raise argparse.ArgumentTypeError("the duration must be positive")
    return value


async def _doctor(deps: Deps) -> int:
    from gemini_relay.tools.doctor import doctor
    from gemini_relay.tools.progress import CallProgress
    from gemini_relay.tools.schemas import EmptyInput

    reply = await doctor(deps, EmptyInput(), CallProgress("doctor"))
    state_lines, state_problems = doctor_state(deps.settings)
    print(reply.text)
    print()
    print("\n".join(state_lines))
    for problem in state_problems:
        print(f"- Action needed: {problem}")
    broken = "Verdict: ❌" in reply.text or bool(state_problems)
    return 1 if broken else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="gemini-relay", description="MCP server relaying to Google's Gemini agents.")
    parser.add_argument("--version", action="version", version=f"gemini-relay {__version__}")
    sub = parser.add_subparsers(dest="command")
    sub.add_parser("serve", help="serve MCP over stdio (the default)")
    run_job_parser = sub.add_parser("run-job", help="(internal) supervise one job until it ends")
    run_job_parser.add_argument("dir", type=Path)
    run_job_parser.add_argument("--lock-fd", type=int, action="append", default=[], help=argparse.SUPPRESS)
    run_job_parser.add_argument("--claim-fd", type=int, default=None, help=argparse.SUPPRESS)
    wait_parser = sub.add_parser("wait-job", help="wait for a job; print done / failed / cancelled")
    wait_parser.add_argument("job_id")
    wait_parser.add_argument("--timeout", type=_seconds, default=None, help="give up after this long (e.g. 90s, 10m)")
    hook_parser = sub.add_parser("hook-wait", help="Claude Code PostToolUse asyncRewake hook for gemini-run")
    hook_parser.add_argument("--timeout", type=_seconds, default=DEFAULT_HOOK_TIMEOUT)
    sub.add_parser("doctor", help="check the setup and the job store; exit 0 ok, 1 broken")
    args = parser.parse_args(argv)
    if args.command == "wait-job":
        return wait_job(args.job_id, args.timeout)
    if args.command == "hook-wait":
        return hook_wait(args.timeout)
    configure()
    if args.command == "run-job":
        from gemini_relay.jobs.supervisor import run_job

        return run_job(args.dir, lock_fds=args.lock_fd, claim_fd=args.claim_fd)
    from gemini_relay.app import build_deps  # the tool layer: not needed by run-job, wait-job, hook-wait

    try:
        settings = Settings.from_env()
        deps = build_deps(settings)
    except ConfigError as exc:
        print(f"gemini-relay: {exc}", file=sys.stderr)
        return 1 if args.command == "doctor" else 2
    if args.command == "doctor":
        return anyio.run(_doctor, deps)
    if args.command in (None, "serve"):
        from gemini_relay.transports import run_server

        logger.info("gemini-relay %s serving on stdio (root %s)", __version__, settings.project_root)
        anyio.run(run_server, deps)
        return 0
    parser.error(f"unknown command {args.command}")
    return 2
