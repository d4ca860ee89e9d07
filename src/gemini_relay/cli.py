"""The `gemini-relay` command: with no subcommand (or `serve`) it serves MCP over stdio, or with `--http` over
Streamable HTTP on a loopback address."""

from __future__ import annotations

import argparse
import gc
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from gemini_relay import TOOL_SURFACE, __version__
from gemini_relay.config import DEFAULT_TIMEOUT_MINUTES, Settings
from gemini_relay.errors import ConfigError
from gemini_relay.log import configure, logger
from gemini_relay.setup.setup_options import add_parser as add_setup_parser
from gemini_relay.transports.token import NO_AUTH_MEANS

if TYPE_CHECKING:
    import socket

    from gemini_relay.tools.common.context import Deps
    from gemini_relay.transports.http import HttpOptions


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
    from gemini_relay.commands import doctor_state
    from gemini_relay.tools.common.inputs import EmptyInput
    from gemini_relay.tools.common.progress import CallProgress
    from gemini_relay.tools.core.doctor import doctor

    reply = await doctor(deps, EmptyInput(), CallProgress("doctor"))
    print(reply.text)
    if deps.problems:  # the state dir it would check may be a stand-in (app.explained_deps)
        return 1
    state_lines, state_problems = doctor_state(deps.settings)
    print()
    print("\n".join(state_lines))
    for problem in state_problems:
        print(f"- Action needed: {problem}")
    broken = "Verdict: ❌" in reply.text or bool(state_problems)
    return 1 if broken else 0


def _listener(args: argparse.Namespace) -> tuple[HttpOptions, socket.socket] | int:
    """The checked HTTP options and the bound socket, or the exit code after saying why (2: refused, 1: bind)."""
    import os

    from gemini_relay.config import default_state_dir
    from gemini_relay.transports.address import parse_address, require_loopback
    from gemini_relay.transports.http import SHUTDOWN_GRACE, HttpOptions, bind
    from gemini_relay.transports.token import http_auth

    try:
        address = parse_address(args.http)
        require_loopback(address)
        auth = http_auth(args.token_file, default_state_dir(os.environ), os.environ, no_auth=args.no_auth)
        options = HttpOptions(address, auth, shutdown_grace=args.shutdown_grace or SHUTDOWN_GRACE)
    except ConfigError as exc:
        print(f"gemini-relay: {exc}", file=sys.stderr)
        return 2
    try:
        return options, bind(address)
    except OSError as exc:
        print(f"gemini-relay: cannot listen on {address.url_host}:{address.port}: {exc.strerror}", file=sys.stderr)
        return 1


def _serve_stdio() -> int:
    """stdio: the front answers initialize and tools/list from the shipped answers while another thread imports
    the SDK and the tool layer (transports/stdio_front.py); then the SDK serves the rest."""
    import threading

    from gemini_relay.transports.stdio_front import FrontAnswers, StdioFront, surface_key, usable_state_dir

    answers = FrontAnswers.load()
    try:
        settings = Settings.from_env()
    except ConfigError:  # the server explains it in its own answers (app.explained_deps): no front answer
        answers = None
    else:
        # The conformance fixtures' surface is not shipped, nor an allowlist's (GEMINI_RELAY_TOOLS: its tools and
        # instructions, or its problem), and the shipped tools/list shows the default GEMINI_MCP_TIMEOUT as
        # timeoutSeconds' maximum: the server answers these itself. So it does a state dir it cannot use: its first
        # answer says so.
        default_timeout = settings.timeout_seconds == DEFAULT_TIMEOUT_MINUTES * 60.0
        allowlist = settings.tools is not None
        if settings.conformance or allowlist or not default_timeout or not usable_state_dir(settings.state_dir):
            answers = None
    backend = answers.backend(settings.backend, os.environ) if answers is not None else None
    surface = surface_key(settings.toolsets, test_tools=settings.test_tools, backend=backend) if backend else ""
    front = StdioFront(answers if backend else None, surface)
    warm_cli = backend == "gemini" and settings.warm and settings.host  # the server's warm-up would boot a warm CLI
    if answers is not None and warm_cli and answers.binary_found("gemini", os.environ):
        threading.Thread(target=_prewarm_early, args=(settings,), name="prewarm", daemon=True).start()
    failed: list[BaseException] = []

    def load() -> None:
        try:
            with _loading():
                import gemini_relay.app
                import gemini_relay.transports.serve  # noqa: F401 - the MCP SDK with them
        except BaseException as exc:  # noqa: BLE001 - re-raised in the main thread below
            failed.append(exc)
        finally:
            front.ready()

    threading.Thread(target=load, name="import", daemon=True).start()
    front.serve_until_ready()
    if failed:
        raise failed[0]
    from gemini_relay.transports.serve import run_server

    deps = _explained_deps()
    if deps is None:
        return 2
    logger.info("gemini-relay %s serving on stdio (root %s)", __version__, deps.settings.project_root)
    import anyio

    anyio.run(run_server, deps, None, None, front)
    return 0


def _prewarm_early(settings: Settings) -> None:
    """The relay host boots the warm CLI while this process is still importing the SDK (jobs/host_connection.py)."""
    from gemini_relay.jobs.host_prewarm import prewarm_early

    prewarm_early(settings)


def _detach() -> None:
    """Leave the starter's process tree, as a daemon does (fork twice): the server's child exits at once and is reaped
    there; the host goes on in its child, reparented to init (or the nearest subreaper), leading a session of its
    own. A client that stops a server with its whole process tree (tree-kill walks parent pids) then stops that
    server alone, not the host that runs every client's jobs and warm CLIs. Called before any thread exists."""
    if os.fork():
        os._exit(0)
    os.setsid()


@contextmanager
def _loading() -> Iterator[None]:
    """Imports for serving, with the cyclic GC paused, then frozen: they make hundreds of thousands of objects that
    live as long as the process (the SDK's pydantic models), which each collection would walk again — during the
    imports, at every full collection while serving, and at exit (bench/start_cpu.py: ~0.1 s + ~0.25 s of CPU a
    server start). The few cycles the imports drop stay (under a thousand objects, ~0.5 MB: not worth a full
    collection). Serving paths only: a process that merely calls `main` (tests, setup) keeps its GC as it is."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if enabled:
            gc.enable()


def _skip_sdk_package_inits() -> None:
    """Register the SDK's `mcp` and `mcp.server` packages without running their `__init__`: those import the MCP
    client (with its HTTP and auth stacks) and the high-level MCPServer, about a third of the SDK's import CPU, and a
    server uses neither. Their submodules (`mcp.server.lowlevel`, `mcp.shared.*`) import as usual. Only in this
    process's serving path: a process that already has the SDK (tests, an embedding) keeps it as it is."""
    import importlib.util

    if "mcp" in sys.modules:
        return
    top = importlib.util.find_spec("mcp")
    if top is None or top.submodule_search_locations is None:
        return  # no SDK package to speak of: the imports that need it say so
    mcp = importlib.util.module_from_spec(top)
    sys.modules["mcp"] = mcp
    server = importlib.util.find_spec("mcp.server")
    if server is None or server.submodule_search_locations is None:
        del sys.modules["mcp"]  # not the SDK's layout: leave it to run as it is
        return
    mcp.server = sys.modules["mcp.server"] = importlib.util.module_from_spec(server)  # type: ignore[attr-defined]


def _explained_deps() -> Deps | None:
    """The server's deps, whatever its environment says: each configuration error is said on stderr too (the
    client's log), and the server comes up to say it to the client. None (said why): it cannot come up at all."""
    import os

    from gemini_relay.app import explained_deps

    try:
        deps = explained_deps(os.environ)
    except ConfigError as exc:
        print(f"gemini-relay: {exc}", file=sys.stderr)
        return None
    for problem in deps.problems:
        print(f"gemini-relay: {problem}", file=sys.stderr)
    if deps.problems:
        logger.warning("%d configuration error(s): calls but gemini-doctor are refused", len(deps.problems))
    return deps


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="gemini-relay", description="MCP server relaying to Google's Gemini agents.")
    shown = f"gemini-relay {__version__} (the tool surface of gemini-relay {TOOL_SURFACE})"
    parser.add_argument("--version", action="version", version=shown)
    parser.add_argument(
        "--http",
        nargs="?",
        const="",
        default=None,
        metavar="HOST:PORT",
        help="serve Streamable HTTP at http://HOST:PORT/mcp instead of stdio (default 127.0.0.1:8765; loopback only)",
    )
    parser.add_argument(
        "--token-file",
        type=Path,
        default=None,
        metavar="PATH",
        help="with --http: the bearer token is the first line of PATH (else $GEMINI_RELAY_HTTP_TOKEN, else one the "
        "relay makes and keeps in its state dir as http-token)",
    )
    parser.add_argument(
        "--no-auth",
        action="store_true",
        help=f"with --http: ask no token at all; {NO_AUTH_MEANS.format(where='127.0.0.1')}",
    )
    parser.add_argument(
        "--shutdown-grace",
        type=_seconds,
        default=None,
        metavar="SECONDS",
        help="with --http: how long calls in flight may finish after SIGTERM/SIGINT (default 5; jobs run on anyway)",
    )
    sub = parser.add_subparsers(dest="command")
    sub.add_parser("serve", help="serve MCP over stdio (the default)")
    host_parser = sub.add_parser("host", help="(internal) the per-user relay host; servers start it on demand")
    host_parser.add_argument("--detach", action="store_true", help="(internal) leave the starter's process tree")
    wait_parser = sub.add_parser("wait-job", help="wait for a job; print done / failed / cancelled")
    wait_parser.add_argument("job_id")
    wait_parser.add_argument("--timeout", type=_seconds, default=None, help="give up after this long (e.g. 90s, 10m)")
    hook_parser = sub.add_parser("hook-wait", help="Claude Code PostToolUse asyncRewake hook for gemini-run")
    hook_parser.add_argument("--timeout", type=_seconds, default=None, help="give up after this long (default 1h)")
    sub.add_parser("doctor", help="check the setup and the job store; exit 0 ok, 1 broken")
    add_setup_parser(sub)
    args = parser.parse_args(argv)
    if args.command == "setup":
        from gemini_relay.setup.command import run as setup

        return setup(args)
    if args.command in ("wait-job", "hook-wait"):
        # Not imported for serving: the stdio front must answer before anything it does not need has loaded.
        from gemini_relay.commands import DEFAULT_HOOK_TIMEOUT, hook_wait, wait_job

        if args.command == "wait-job":
            return wait_job(args.job_id, args.timeout)
        return hook_wait(DEFAULT_HOOK_TIMEOUT if args.timeout is None else args.timeout)
    configure()
    http_only = args.token_file is not None or args.shutdown_grace is not None or args.no_auth
    if (args.http is not None or http_only) and args.command not in (None, "serve"):
        parser.error("--http, --token-file, --no-auth and --shutdown-grace apply to serving only")
    if http_only and args.http is None:
        parser.error("--token-file, --no-auth and --shutdown-grace need --http")
    if args.command == "host":
        if args.detach:
            _detach()
        with _loading():
            from gemini_relay.relay_host.host import serve_host
        return serve_host()
    _skip_sdk_package_inits()
    listener = _listener(args) if args.http is not None else None
    if isinstance(listener, int):
        return listener
    if listener is None and args.command in (None, "serve"):
        return _serve_stdio()
    import anyio

    with _loading():
        deps = _explained_deps()  # the tool layer: not needed by host, wait-job, hook-wait
        if listener is not None:
            import gemini_relay.transports.serve  # noqa: F401 - the SDK's server with the rest, frozen with it
    if deps is None:
        return 1 if args.command == "doctor" else 2
    if args.command == "doctor":
        return anyio.run(_doctor, deps)
    if args.command in (None, "serve"):
        from gemini_relay.transports.serve import run_server

        assert listener is not None  # stdio is served by _serve_stdio
        options, sock = listener
        logger.info("gemini-relay %s serving on HTTP (root %s)", __version__, deps.settings.project_root)
        with sock:
            anyio.run(run_server, deps, options, sock)
        return 0
    parser.error(f"unknown command {args.command}")
    return 2
