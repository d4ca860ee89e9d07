"""The `setup` subcommand's options, kept apart so that `gemini-relay` (the stdio server above all) does not load the
setup machinery just to build its argument parser."""

from __future__ import annotations

import argparse
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    SubParsers = argparse._SubParsersAction[argparse.ArgumentParser]

CLIENT_NAMES = ("claude-code", "codex", "cursor", "vscode", "claude-desktop", "gemini-cli", "agy")  # clients.py's


class Approve(StrEnum):
    """`--approve`: which of the relay's tools Codex runs without a prompt."""

    READ_ONLY = "read-only"  # the tools with readOnlyHint; the rest follow the user's approval_policy
    ALL = "all"  # every tool (default_tools_approval_mode = "approve"): what `codex exec` needs for gemini-ask


def add_parser(sub: SubParsers) -> None:
    parser = sub.add_parser(
        "setup",
        help="add the relay to the MCP clients installed here (shows; --yes writes; --remove undoes)",
        description="Find the MCP clients in this home and show the entry that starts this relay in each; --yes "
        "writes them (a backup of each file first), --remove takes them out again.",
    )
    parser.add_argument(
        "--client",
        action="append",
        dest="setup_clients",
        metavar="NAME",
        help=f"only this client, even if it was not found (repeatable): {', '.join(CLIENT_NAMES)}",
    )
    parser.add_argument(
        "--http",
        nargs="?",
        const="",
        default=None,
        dest="setup_http",
        metavar="HOST:PORT",
        help="the HTTP entry (gemini-relay-http) for a server started with `gemini-relay --http` (default "
        "127.0.0.1:8765), with its bearer token, instead of the stdio one (gemini-relay)",
    )
    parser.add_argument(
        "--token-file",
        type=Path,
        default=None,
        dest="setup_token_file",
        metavar="PATH",
        help="with --http: the token is the first line of PATH, as for the server",
    )
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--dry-run", action="store_true", help="show what would change and write nothing (default)")
    mode.add_argument("--yes", action="store_true", help="write it")
    parser.add_argument("--remove", action="store_true", help="take the relay's entries out (with --http: that one)")
    parser.add_argument("--force", action="store_true", help="replace (or remove) a different entry of that name")
    parser.add_argument(
        "--approve",
        choices=[mode.value for mode in Approve],
        default=None,
        dest="setup_approve",
        help="Codex: which of the relay's tools run without a prompt: read-only (the default without a terminal to "
        "ask on) or all (needed for `codex exec`, which cannot ask: it refuses gemini-ask and the other run tools "
        "otherwise); asked when setup --yes writes Codex's entry from a terminal",
    )
    parser.add_argument(
        "--project",
        type=Path,
        default=None,
        metavar="DIR",
        help="Claude Desktop starts servers outside any project: the root its entry names (default: this folder)",
    )
