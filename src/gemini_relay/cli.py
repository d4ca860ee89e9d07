"""The `gemini-relay` command: with no subcommand (or `serve`) it serves MCP over stdio."""

from __future__ import annotations

import argparse
import sys

import anyio

from gemini_relay import __version__
from gemini_relay.backends.gemini_cli import GeminiCliBackend
from gemini_relay.config import Settings
from gemini_relay.errors import ConfigError
from gemini_relay.jobs.engine import RunEngine
from gemini_relay.log import configure, logger
from gemini_relay.tools.context import Deps


def build_deps(settings: Settings) -> Deps:
    gemini = GeminiCliBackend(settings)
    engine = RunEngine({gemini.name: gemini}, max_concurrent=settings.max_concurrent)
    return Deps(settings=settings, engine=engine, gemini=gemini)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="gemini-relay", description="MCP server relaying to Google's Gemini agents.")
    parser.add_argument("--version", action="version", version=f"gemini-relay {__version__}")
    sub = parser.add_subparsers(dest="command")
    sub.add_parser("serve", help="serve MCP over stdio (the default)")
    args = parser.parse_args(argv)
    configure()
    try:
        settings = Settings.from_env()
    except ConfigError as exc:
        print(f"gemini-relay: {exc}", file=sys.stderr)
        return 2
    if args.command in (None, "serve"):
        from gemini_relay.server import RelayServer
        from gemini_relay.transports import serve_stdio

        deps = build_deps(settings)
        server = RelayServer(deps).build()
        logger.info("gemini-relay %s serving on stdio (root %s)", __version__, settings.project_root)
        anyio.run(serve_stdio, server, [deps.warm_up])
        return 0
    parser.error(f"unknown command {args.command}")
    return 2
