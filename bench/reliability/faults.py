"""faults: a misbehaving CLI, a full or read-only state dir, two servers racing one idempotency key.

A fake CLI (fake_cli.py) floods, emits invalid UTF-8, writes a 100 MB line, leaves a grandchild on its pipes or never
reads stdin: every call is answered within a bound, never as an internal error, the server still answers a ping, no
process is left. The state dir is a small tmpfs (when mount works here), filled up or remounted read-only: a run is
refused with a clear error and no job dir is left half-written. Two servers start the same idempotency key at once:
one job, one upstream run.
"""

from __future__ import annotations

import contextlib
import json
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

import anyio

from bench.kill9 import World
from bench.reliability.table import Figure, zero
from bench.reliability.world import call, left_running, state_dir, world
from tests.fakes.fake_gemini_api import latest_user_text
from tests.fakes.gemini_home import REPO_GEMINI_CLI

CATEGORY = "faults"
FAKE = Path(__file__).with_name("fake_cli.py")
MODES = ("flood", "badutf8", "bigline", "grandchild", "nostdin")
SLOW = 30.0  # a misbehaving CLI that has exited must not hold its call this long
CLEAR = ("space", "read-only", "Read-only", "state dir", "cannot write", "could not")


def fake_cli(w: World, mode: str, megabytes: int) -> Path:
    path = w.relay.base / f"gemini-{mode}"
    real = shlex.quote(str(REPO_GEMINI_CLI))
    run = f'FAKE_CLI_MB={megabytes} exec {shlex.quote(sys.executable)} {shlex.quote(str(FAKE))} {mode} "$@"'
    path.write_text(f'#!/bin/sh\ncase "$1" in --help|--version) exec {real} "$@";; esac\n{run}\n', encoding="utf-8")
    path.chmod(0o755)
    return path


async def cli_faults(short: bool) -> tuple[list[str], list[str]]:
    bad: list[str] = []
    with world("faults-cli", GEMINI_RELAY_TOOLSETS="", GEMINI_MCP_TIMEOUT="1") as w:
        for mode in ("badutf8", "grandchild") if short else MODES:
            cli = fake_cli(w, mode, 10 if short else 100)
            prompt = "x" * (2 << 20) if mode == "nostdin" else f"fault {mode}"
            try:
                async with w.relay.client(GEMINI_CLI_PATH=str(cli)) as client:
                    started = time.monotonic()
                    answer = await call(client, "gemini-ask", {"prompt": prompt}, bound=120)
                    took = time.monotonic() - started
                    print(f"  fault {mode}: answered in {took:.1f}s: {answer.text[:100]!r}", file=sys.stderr)
                    if took > SLOW:
                        bad.append(f"{mode}: answered only after {took:.0f}s: {answer.text[:120]!r}")
                    if "internal error" in answer.text.lower():
                        bad.append(f"{mode}: {answer.text[:160]!r}")
                    ping = await call(client, "gemini-ping", {}, bound=30)
                    if ping.text != "Pong!":
                        bad.append(f"{mode}: ping answered {ping.text[:60]!r}")
            except Exception as exc:  # noqa: BLE001 - a hang or a dead server is the finding
                bad.append(f"{mode}: {exc!r}"[:200])
        left = await left_running(w)
    return bad, left


def _mount(path: Path, *opts: str) -> bool:
    return subprocess.run(["mount", "-t", "tmpfs", "-o", ",".join(opts), "tmpfs", str(path)],
                          capture_output=True, check=False).returncode == 0  # fmt: skip


def _read_only(path: Path) -> None:
    """Remount read-only; while a process holds a file open for writing (the relay host's log and locks) that is
    refused as busy, so a read-only bind mount goes over it instead: every new open through the path is read-only."""
    if subprocess.run(["mount", "-o", "remount,ro", str(path)], capture_output=True, check=False).returncode == 0:
        return
    subprocess.run(["mount", "--bind", str(path), str(path)], check=True)
    subprocess.run(["mount", "-o", "remount,bind,ro", str(path)], check=True)


def half_written(state: Path) -> list[str]:
    """Job dirs without a readable meta.json: a job that is neither there nor absent."""
    jobs = state / "jobs"
    found = []
    for job in sorted(jobs.iterdir()) if jobs.is_dir() else []:
        try:
            json.loads((job / "meta.json").read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            found.append(f"{job.name}: {exc!r}"[:120])
    return found


async def state_faults() -> tuple[list[str], str]:
    """(findings, how the fault was made)."""
    bad: list[str] = []
    with world("faults-state", GEMINI_RELAY_TOOLSETS="jobs") as w:
        state = state_dir(w)
        state.mkdir(parents=True, exist_ok=True)
        if not _mount(state, "size=512k"):
            return [], "skipped: mount -t tmpfs refused here"
        try:
            for fault in ("full", "read-only"):
                async with w.relay.client() as client:
                    await call(client, "gemini-ping", {})  # the server is up before the fault
                    if fault == "full":
                        with contextlib.suppress(OSError), (state / "filler").open("ab") as fill:
                            while True:  # until ENOSPC
                                fill.write(b"\0" * 4096)
                                fill.flush()
                    else:
                        (state / "filler").unlink(missing_ok=True)
                        _read_only(state)
                    answer = await call(client, "gemini-run", {"prompt": f"state {fault}"})
                    if not answer.is_error or "internal error" in answer.text.lower():
                        errors = [ln for ln in w.relay.stderr().splitlines() if "Error" in ln and "File" not in ln]
                        cause = errors[-1][-160:] if errors else "no error line in the server log"
                        bad.append(f"state dir {fault}: gemini-run answered {answer.text[:90]!r}; server log: {cause}")
                    elif not any(word in answer.text for word in CLEAR):
                        bad.append(f"state dir {fault}: unclear error {answer.text[:160]!r}")
                    bad += [f"state dir {fault}: half-written job {h}" for h in half_written(state)]
        finally:
            while subprocess.run(["umount", "-l", str(state)], capture_output=True, check=False).returncode == 0:
                pass  # the read-only bind over the tmpfs, then the tmpfs
        bad += await left_running(w)
    return bad, "tmpfs 512 KiB, filled, then remounted read-only"


async def races() -> list[str]:
    """Two servers sharing one state dir start the same idempotency key, then continue the same conversation, at
    once: one job and one upstream run for the key; exactly one run of the conversation, the other refused."""
    bad: list[str] = []
    with world("faults-race", GEMINI_RELAY_TOOLSETS="jobs") as w:
        outcomes: dict[str, list[str]] = {"key": [], "conversation": []}

        async def start(race: str, args: dict[str, str]) -> None:
            async with w.relay.client() as client:
                answer = await call(client, "gemini-run", args)
                if answer.is_error:
                    outcomes[race].append(f"refused: {answer.text[:200]}")
                    return
                job = str((answer.structured or {})["job_id"])
                outcomes[race].append(job)
                await call(client, "gemini-wait", {"jobId": job, "wait": 60})

        async def both(race: str, args: dict[str, str]) -> None:
            async with anyio.create_task_group() as tg:
                tg.start_soon(start, race, args)
                tg.start_soon(start, race, args)

        await both("key", {"prompt": "[[fake:slow:0.2]] race one key", "idempotencyKey": "race-key-1"})
        jobs = [p for p in (state_dir(w) / "jobs").iterdir() if p.is_dir()]
        if len(set(outcomes["key"])) != 1 or len(jobs) != 1 or upstream(w, "race one key") != 1:
            bad.append(f"one idempotency key from two servers: {outcomes['key']}, {len(jobs)} jobs, "
                       f"{upstream(w, 'race one key')} runs")  # fmt: skip
        async with w.relay.client() as client:
            first = await call(client, "gemini-ask", {"prompt": "start a conversation"})
        conversation = re.search(r"conversationId: (\S+)", first.text)
        if conversation is None:
            return [*bad, f"no conversationId to race on: {first.text[-120:]!r}"]
        await both("conversation", {"prompt": "[[fake:slow:0.3]] race one conversation",
                                    "conversationId": conversation.group(1)})  # fmt: skip
        winners = [o for o in outcomes["conversation"] if not o.startswith("refused")]
        losers = [o for o in outcomes["conversation"] if "in flight" in o]
        if len(winners) != 1 or len(losers) != 1 or upstream(w, "race one conversation") != 1:
            bad.append(f"one conversation from two servers: {outcomes['conversation']}, "
                       f"{upstream(w, 'race one conversation')} runs")  # fmt: skip
        bad += await left_running(w)
    return bad


def upstream(w: World, needle: str) -> int:
    return sum(1 for r in w.relay.api.requests if r.kind == "main" and needle in latest_user_text(r.body or {}))


async def attack(short: bool) -> list[Figure]:
    cli_bad, left = await cli_faults(short)
    state_bad: list[str] = []
    race: list[str] = []
    how = "full mode only"
    if short:
        pass
    else:
        state_bad, how = await state_faults()
        race = await races()
    return [
        zero(CATEGORY, f"misbehaving CLIs ({', '.join(MODES)}) not survived", cli_bad),
        zero(CATEGORY, "processes left (misbehaving CLIs)", left),
        zero(CATEGORY, f"state dir full / read-only: unclear or half-written ({how})", state_bad),
        zero(CATEGORY, "two servers racing one idempotency key / one conversation: not exactly one winner", race),
    ]
