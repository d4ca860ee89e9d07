"""The `gemini-relay` command: with no subcommand (or `serve`) it serves MCP over stdio."""

from __future__ import annotations

import argparse
import sys

import anyio

from gemini_relay import __version__
from gemini_relay.backends.agy import AgyBackend
from gemini_relay.backends.gemini_cli import GeminiCliBackend
from gemini_relay.backends.probe import ProbeCache
from gemini_relay.backends.registry import BackendSelector
from gemini_relay.config import Settings
from gemini_relay.errors import ConfigError
from gemini_relay.jobs.engine import RunEngine
from gemini_relay.log import configure, logger
from gemini_relay.tools.context import Deps


def build_deps(settings: Settings) -> Deps:
    """Raises ConfigError for settings that must fail fast (an explicit AGY_CLI_PATH that is not executable)."""
    probes = ProbeCache()
    gemini = GeminiCliBackend(settings, probes)
    agy = AgyBackend(settings, probes)
    agy.validate_config()
    engine = RunEngine({gemini.name: gemini, agy.name: agy}, max_concurrent=settings.max_concurrent)
    selector = BackendSelector(settings, agy.locate)
    return Deps(settings=settings, engine=engine, gemini=gemini, agy=agy, selector=selector)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="gemini-relay", description="MCP server relaying to Google's Gemini agents.")
    parser.add_argument("--version", action="version", version=f"gemini-relay {__version__}")
    sub = parser.add_subparsers(dest="command")
    sub.add_parser("serve", help="serve MCP over stdio (the default)")
    args = parser.parse_args(argv)
    configure()
    try:
        settings = Settings.from_env()
        deps = build_deps(settings)
    except ConfigError as exc:
        print(f"gemini-relay: {exc}", file=sys.stderr)
        return 2
    if args.command in (None, "serve"):
        from gemini_relay.server import RelayServer
        from gemini_relay.transports import serve_stdio

        server = RelayServer(deps).build()
        logger.info("gemini-relay %s serving on stdio (root %s)", __version__, settings.project_root)
        anyio.run(serve_stdio, server, [deps.warm_up])
        return 0
    parser.error(f"unknown command {args.command}")
    return 2
