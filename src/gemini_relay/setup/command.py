"""`gemini-relay setup`: show (the default), write (`--yes`) or undo (`--remove`) the relay's entry in each MCP
client found in this home. Offline: nothing here touches the network."""

from __future__ import annotations

import argparse
import os
import sys
import textwrap
from collections.abc import Callable, Mapping
from functools import cache
from pathlib import Path

from gemini_relay.config import default_state_dir
from gemini_relay.errors import ConfigError
from gemini_relay.setup import claude_cli
from gemini_relay.setup.clients import BY_NAME, CLIENTS, Client, Home
from gemini_relay.setup.config_files import Records
from gemini_relay.setup.entries import HTTP_NAME, NAMES, STDIO_NAME, Entry, Token, http_entry, launcher, stdio_entry
from gemini_relay.setup.entry_writer import Run, Target, remove, write
from gemini_relay.setup.lock import LockBusy, setup_lock
from gemini_relay.setup.setup_options import Approve

CACHES = ("/.cache/uv/", "/uv/archive-", "/pip-build-env-")  # where uvx and pip keep throwaway environments


def run(args: argparse.Namespace) -> int:
    """Exit 0; 1 when a file could not be read or written; 2 for a bad option. A run that writes holds the setup
    lock (lock.py) from reading the record to saving it."""
    chosen: list[str] = args.setup_clients or []
    unknown = [name for name in chosen if name not in BY_NAME]
    if unknown:
        print(f"gemini-relay setup: unknown client {unknown[0]!r}; one of {', '.join(BY_NAME)}", file=sys.stderr)
        return 2
    state_dir = default_state_dir(os.environ)
    if not args.yes:
        return _run(args, state_dir, chosen)
    try:
        with setup_lock(state_dir, lambda line: print(f"gemini-relay setup: {line}", file=sys.stderr, flush=True)):
            return _run(args, state_dir, chosen)
    except (LockBusy, OSError) as exc:
        print(f"gemini-relay setup: {exc}", file=sys.stderr)
        return 1


def _run(args: argparse.Namespace, state_dir: Path, chosen: list[str]) -> int:
    env = os.environ
    home = Home(env, Path(env.get("HOME") or Path.home()).expanduser(), sys.platform)
    try:
        http = args.setup_http is not None
        url = _url(args.setup_http) if http or args.remove else ""
        token = None
        if http or args.remove:
            token = _token(args.setup_token_file, state_dir, env, home, create=args.yes and not args.remove)
    except ConfigError as exc:
        print(f"gemini-relay setup: {exc}", file=sys.stderr)
        return 2
    command, command_args = launcher(sys.argv[0], sys.executable)
    job = Run(home, Records(state_dir), yes=args.yes, force=args.force)
    _header(job, command, command_args, url=url, token=token, removing=args.remove)
    project = (args.project or Path.cwd()).resolve()

    def entries(client: Client) -> dict[str, Entry]:
        extra = {"GEMINI_RELAY_PROJECT_ROOT": str(project)} if client.names_project else None
        made = {STDIO_NAME: stdio_entry(command, command_args, extra)}
        if client.http and token is not None and (token.value is not None or not args.remove):
            made[HTTP_NAME] = http_entry(url, token)
        return made

    touched, seen = 0, False
    for client in CLIENTS:
        if chosen and client.name not in chosen:
            continue
        recorded = args.remove and job.records.get(client.config(home)) is not None  # undo what setup wrote
        seen = seen or client.name in chosen or bool(client.signs(home))
        if not _eligible(job, client, home, named=client.name in chosen or recorded, http=http):
            continue
        touched += 1
        every = client.name == "codex" and not args.remove and _approve_all(args)
        target = _target(client, home, env, _approved, every)
        made = entries(client)
        if args.remove:
            names = [HTTP_NAME] if http else [name for name in NAMES if client.http or name == STDIO_NAME]
            remove(job, target, names, made)
        else:
            write(job, target, [made[HTTP_NAME if http else STDIO_NAME]])
            if client.name == "codex":
                _codex_note(job, every)
    _footer(job, found=bool(touched or seen), removing=args.remove, http=http, args=args)
    print("\n".join(job.lines))
    return 1 if job.failed else 0


def _approve_all(args: argparse.Namespace) -> bool:
    """--approve, else (writing, from a terminal) the user's answer, else read-only."""
    if args.setup_approve is None and args.yes and sys.stdin.isatty() and sys.stdout.isatty():
        run_tools = ", ".join(_run_tools())
        question = (
            f"Codex: may the relay's tools that start Gemini runs ({run_tools}) run without a prompt? `codex exec` "
            "cannot ask, so without this it refuses them. [y/N] "
        )
        print(question, end="", flush=True)  # on stdout: input() would put it on stderr when readline is loaded
        answer = sys.stdin.readline().strip().lower()  # "" at end of input: read-only
        args.setup_approve = Approve.ALL if answer in ("y", "yes") else Approve.READ_ONLY
    return bool(args.setup_approve == Approve.ALL)


def _codex_note(job: Run, every: bool) -> None:
    """What a `codex exec` user must know about the approvals just written (or shown)."""
    if every:
        job.say("  Codex runs every gemini-relay tool without a prompt, `codex exec` included")
        job.say('  (default_tools_approval_mode = "approve"; --approve read-only takes it back).')
        return
    asks = f"Codex asks before {', '.join(_run_tools())} (your approval_policy); `codex exec` cannot ask and refuses"
    asks += ' them ("MCP tool call requires approval"). For `codex exec`:'
    job.lines += textwrap.wrap(asks, 116, initial_indent="  ", subsequent_indent="  ")
    job.say("    gemini-relay setup --client codex --approve all --yes")


@cache
def _approved() -> tuple[str, ...]:
    from gemini_relay.setup.entries import read_only_tools

    return tuple(read_only_tools())


@cache
def _run_tools() -> tuple[str, ...]:
    from gemini_relay.setup.entries import read_only_tools

    return tuple(read_only_tools(read_only=False))


def _eligible(job: Run, client: Client, home: Home, *, named: bool, http: bool) -> bool:
    """Say whether the client was found, and whether setup goes on with it."""
    signs = client.signs(home)
    found = f"found ({', '.join(signs)})" if signs else "not found"
    if not named and not signs:
        job.say(f"{client.label}: not found")
        return False
    if not named and not client.by_default:
        job.say(f"{client.label}: {found}; {client.note}")
        return False
    if http and not client.http:
        job.say(f"{client.label}: {found}; no HTTP entry: {client.note}")
        return False
    job.say(f"{client.label}: {found if signs else 'not found; named with --client'}")  # or written by setup
    return True


def _target(
    client: Client, home: Home, env: Mapping[str, str], approved: Callable[[], tuple[str, ...]], every: bool
) -> Target:
    fmt = client.format(approved() if client.name == "codex" else (), every)
    path = client.config(home)
    binary = home.which(client.via_cli) if client.via_cli else None
    if binary is None:
        return Target(client, path, fmt)
    cli = claude_cli.ClaudeCli(binary, env, Path.cwd())
    return Target(client, path, fmt, cli, claude_cli.side_folder(env, home.home))


def _url(raw: str | None) -> str:
    from gemini_relay.transports.address import parse_address, require_loopback

    address = parse_address(raw)
    require_loopback(address)
    return f"http://{address.url_host}:{address.port}/mcp"


def _token(token_file: Path | None, state_dir: Path, env: Mapping[str, str], home: Home, *, create: bool) -> Token:
    """The token the server will ask for, as `gemini-relay --http` finds it (transports/token.py); the stored one
    is made only when setup writes (a dry run names where it will be)."""
    from gemini_relay.transports.token import STORED_NAME, TOKEN_ENV, load_token, stored_token

    if token_file is not None:
        return Token(load_token(token_file), f"the first line of {home.short(token_file)}")
    if env.get(TOKEN_ENV, "").strip():
        return Token(env[TOKEN_ENV].strip(), f"${TOKEN_ENV}")
    stored = state_dir / STORED_NAME
    if stored.exists() or create:
        return Token(stored_token(stored), f"the first line of {home.short(stored)}")
    return Token(None, f"the token made in {home.short(stored)} on --yes")


def _header(job: Run, command: str, args: tuple[str, ...], *, url: str, token: Token | None, removing: bool) -> None:
    if removing:
        dry = "" if job.yes else " (dry run: nothing changes without --yes)"
        job.say(f"gemini-relay setup --remove: the relay's entries come out; files setup made go{dry}.")
    elif token is not None:
        job.say(f"gemini-relay setup: the HTTP entry {HTTP_NAME} reaches {url} with the bearer token ({token.where}).")
    else:
        shown = " ".join([command, *args])
        job.say(f"gemini-relay setup: the stdio entry {STDIO_NAME} starts {shown}")
        job.say("with GEMINI_CLI_TRUST_WORKSPACE=true (the Gemini CLI runs headless only in a folder it trusts).")
        if any(part in command for part in CACHES):
            job.say("⚠️ This gemini-relay runs from a cache (uvx?): the entries break when it is cleaned. Install it")
            job.say("(pipx install <checkout>, or a venv) and run setup from that installation.")
    job.say("")


def _footer(job: Run, *, found: bool, removing: bool, http: bool, args: argparse.Namespace) -> None:
    job.say("")
    if not found:
        job.say(f"No client found. Name one with --client ({', '.join(BY_NAME)}), or use the README's snippets.")
        return
    if not job.yes and any(" would " in line for line in job.lines):
        job.say(f"Nothing was changed. To do it: gemini-relay setup {' '.join(_flags(args))}")
    if http and not removing:
        token_file = f" --token-file {args.setup_token_file}" if args.setup_token_file else ""
        job.say(f"Start the server with: gemini-relay --http {args.setup_http or '127.0.0.1:8765'}{token_file}")


def _flags(args: argparse.Namespace) -> list[str]:
    """This invocation's options, with --yes for --dry-run."""
    flags = [f"--client {name}" for name in args.setup_clients or []]
    if args.setup_http is not None:
        flags.append(f"--http {args.setup_http}".strip())
    if args.setup_token_file is not None:
        flags.append(f"--token-file {args.setup_token_file}")
    if args.project is not None:
        flags.append(f"--project {args.project}")
    if args.setup_approve is not None:
        flags.append(f"--approve {args.setup_approve}")
    flags += [flag for flag, on in (("--remove", args.remove), ("--force", args.force)) if on]
    return [*flags, "--yes"]
